"""Which network interface gloo binds, for the peers (train.py, lm_peer.py). Under scripts/cluster.sh
--ranks each rank runs in its own namespace, whose interface QG_IFACE names: gloo must use it, not the
one the host name resolves to. A rank on loopback (master 127.x) uses lo. GLOO_SOCKET_IFNAME set by
the caller wins."""
import os


def bind_gloo_interface(master_addr):
    if "GLOO_SOCKET_IFNAME" in os.environ:
        return
    iface = os.environ.get("QG_IFACE", "") or ("lo" if master_addr.startswith("127.") else "")
    if iface:
        os.environ["GLOO_SOCKET_IFNAME"] = iface
