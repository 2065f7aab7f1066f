// qgossip._core: the node for a program's own training loop (node/run/node_session.hpp), seen from
// Python. It knows nothing of torch: a model is one contiguous, writable float32 buffer (the buffer
// protocol), so one build serves every torch; the torch side is python/qgossip/torch.py. The GIL is
// released while a round runs (it waits on the network), and SIGINT stops the node there as it
// stops `qgossip run` (then KeyboardInterrupt). docs/python.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "node/config/config.hpp"
#include "node/config/slurm_step.hpp"
#include "node/run/node_session.hpp"
#include "node/run/run_control.hpp"

namespace py = pybind11;
using namespace qgossip;

namespace {

// While a round runs without the GIL, SIGINT and SIGTERM raise the node's stop flag (as in `qgossip
// run`) instead of Python's, which would be seen only once the round returned.
class stop_on_signals {
 public:
  stop_on_signals() {
    struct sigaction sa {};
    sa.sa_handler = [](int) { request_stop(); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~stop_on_signals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// A node and the program's buffer it works on (kept alive while the node may write into it).
class py_node {
 public:
  py_node(const std::string& config, int rank, std::vector<std::string> overrides, bool progress) {
    // The program's own model, whatever the run YAML's model: section says (a CLI run's YAML drives a
    // Python loop as it is: tests/python/test_cli_parity.py).
    overrides.push_back(kProgramModelSet);
    clear_stop_request();
    run_config c = load_run_config(config, overrides);
    node_run_options options;
    options.progress_json = progress;  // the launcher's protocol on stdout (qgossip launch --exec)
    session_ = std::make_unique<node_session>(std::move(c), rank, options);
  }

  void attach(const py::buffer& params, const py::bytes& state) {
    const py::buffer_info info = params.request(/*writable=*/true);
    if (info.format != py::format_descriptor<float>::format() || info.itemsize != 4)
      throw py::type_error("attach: the parameters must be float32, got format '" + info.format + "'");
    py::ssize_t expected = info.itemsize;
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
      if (info.shape[d] > 1 && info.strides[d] != expected)
        throw py::value_error("attach: the parameters must be one contiguous buffer");
      expected *= info.shape[d];
    }
    buffer_ = params;
    const std::string_view saved = state;  // the bytes stay alive: `state` holds them
    run([&] {
      session_->attach({static_cast<float*>(info.ptr), static_cast<std::size_t>(info.size)},
                       std::as_bytes(std::span<const char>(saved.data(), saved.size())));
    });
  }

  py::bytes state() {
    const std::vector<std::byte> bytes = run([&] { return session_->state(); });  // may land a round
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }

  void step() {
    run([&] { session_->step(); });
  }
  void settle() {
    run([&] { session_->settle(); });
  }
  void mix(std::uint64_t rounds) {
    run([&] { session_->mix(rounds); });
  }
  void log(double loss) { session_->log_loss(loss); }
  void set_group_hashes(std::vector<std::uint64_t> hashes) { session_->set_group_hashes(std::move(hashes)); }
  void log_metric(const std::string& name, double value) { session_->log_metric(name, value); }
  int close() {
    return static_cast<int>(run([&] { return session_->close(); }));
  }
  // The program's loop raised (`interrupted`: KeyboardInterrupt): the node ends so at once.
  int end(bool interrupted, const std::string& why) {
    const node_exit exit = interrupted ? node_exit::interrupted : node_exit::failed;
    py::gil_scoped_release free;
    return static_cast<int>(session_->end(exit, why));
  }
  node_session& session() { return *session_; }

 private:
  template <class F>
  std::invoke_result_t<F&> run(F&& f) {
    {
      py::gil_scoped_release free;
      stop_on_signals signals;
      try {
        return f();
      } catch (const node_failure& e) {
        if (e.exit() != node_exit::interrupted) throw;
      }
    }  // interrupted: the node has stopped, Python hears Ctrl-C as usual
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }

  std::unique_ptr<node_session> session_;
  py::object buffer_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "qgossip's node for a program's own training loop (docs/python.md)";
  static py::exception<node_failure> node_error(m, "NodeError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const node_failure& e) {
      py::object error = py::reinterpret_borrow<py::object>(node_error.ptr())(e.what());
      error.attr("exit") = static_cast<int>(e.exit());
      PyErr_SetObject(node_error.ptr(), error.ptr());
    } catch (const config_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const invariant_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // The 64-bit hash of a float32 buffer, as a node's summary records its model's (model_hash).
  m.def("model_hash", [](const py::buffer& values) {
    const py::buffer_info info = values.request();
    if (info.format != py::format_descriptor<float>::format() || info.itemsize != 4)
      throw py::type_error("model_hash: expected a float32 buffer, got format '" + info.format + "'");
    return hash64(std::span<const float>(static_cast<const float*>(info.ptr), static_cast<std::size_t>(info.size)));
  });
  // The run's number of nodes and processes a node (topology.n, topology.group_size: 0 when not
  // given) as the YAML and its overrides say, without starting a node.
  m.def("run_shape", [](const std::string& config, std::vector<std::string> overrides) {
    overrides.push_back(kProgramModelSet);
    const topology_config t = load_run_config(config, overrides).topology;
    return std::pair{t.n, t.group_size};
  }, py::arg("config"), py::arg("overrides") = std::vector<std::string>{});
  // A Slurm step's host list and tasks per node, expanded as the C++ loader does (qgossip/placement.py).
  m.def("expand_hostlist", [](const std::string& list) { return expand_hostlist(list); }, py::arg("list"));
  m.def("expand_tasks_per_node", [](const std::string& counts) { return expand_tasks_per_node(counts); },
        py::arg("counts"));
  py::class_<py_node>(m, "Node")
      .def(py::init<const std::string&, int, std::vector<std::string>, bool>(), py::arg("config"), py::arg("rank"),
           py::arg("overrides") = std::vector<std::string>{}, py::arg("progress") = false)
      .def("attach", &py_node::attach, py::arg("params"), py::arg("state") = py::bytes())
      .def("state", &py_node::state)
      .def("step", &py_node::step)
      .def("mix", &py_node::mix, py::arg("rounds"))
      .def("settle", &py_node::settle)
      .def("log", &py_node::log, py::arg("loss"))
      .def("log_metric", &py_node::log_metric, py::arg("name"), py::arg("value"))
      .def("close", &py_node::close)
      .def("end", &py_node::end, py::arg("interrupted"), py::arg("why"))
      .def("set_group_hashes", &py_node::set_group_hashes, py::arg("hashes"))
      .def_property_readonly("rank", [](py_node& n) { return n.session().rank(); })
      .def_property_readonly("round", [](py_node& n) { return n.session().round(); })
      .def_property_readonly("steps", [](py_node& n) { return n.session().steps(); })
      .def_property_readonly("size", [](py_node& n) { return n.session().size(); })
      .def_property_readonly("attached", [](py_node& n) { return n.session().attached(); })
      .def_property_readonly("closed", [](py_node& n) { return n.session().closed(); })
      .def_property_readonly("done", [](py_node& n) { return n.session().done(); })
      .def_property_readonly("nodes", [](py_node& n) { return n.session().config().topology.n; })
      .def_property_readonly("local_steps", [](py_node& n) { return n.session().config().train.local_steps; })
      .def_property_readonly("output_dir", [](py_node& n) {
        const run_config& c = n.session().config();
        return c.output_dir + "/" + c.name;
      });
}
