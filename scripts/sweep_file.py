"""Reading a sweep file (scripts/sweep.py, scripts/tta.py): the YAML mapping at its top, with the
unknown and missing keys named. Each script passes its own exception class, so the messages and the
exit codes stay those of the script the user ran."""


def read_mapping(path, allowed, required, error):
    """The top-level mapping of the YAML file at path; raises error("<path>: ...") when it cannot be
    read, is not YAML, is not a mapping, has a key outside allowed or lacks one of required."""
    import yaml

    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise error(f"{path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise error(f"{path}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise error(f"{path}: expected a mapping at the top")
    for key in doc:
        if key not in allowed:
            raise error(f"{path}: unknown key '{key}' (expected one of: {', '.join(allowed)})")
    for key in required:
        if key not in doc:
            raise error(f"{path}: missing required key '{key}'")
    return doc
