"""The text a byte-level language model trains on, as bytes: by default Debian's King James Version
(package bible-kjv, which brings bible-kjv-text: scripts/setup.sh installs it), read with its own
`bible` command, one verse a line (4.3 MB); or any text file. The last tenth is held out for
validation, the same bytes for every rank and every system that trains on it."""
import shutil
import subprocess

import torch

# Every verse from Genesis 1:1 to Revelation 22:21, unwrapped (a line width no verse reaches).
KJV_COMMAND = ["bible", "-l1000000", "Gen1:1-Rev22:21"]
HELD_OUT = 0.1


def kjv_bytes():
    if shutil.which(KJV_COMMAND[0]) is None:
        raise SystemExit("the default corpus is Debian's King James Version: install bible-kjv "
                         "(scripts/setup.sh does), or give a text file with --text FILE")
    text = subprocess.run(KJV_COMMAND, capture_output=True, check=True).stdout
    if len(text) < 4_000_000:
        raise SystemExit(f"{' '.join(KJV_COMMAND)} printed {len(text)} bytes, where the whole text is about "
                         "4.3 MB: is bible-kjv-text complete?")
    return text


def read_corpus(path=None, least=4096):
    """(train, validation) byte tensors of the file at path, or of the King James Version."""
    try:
        data = open(path, "rb").read() if path else kjv_bytes()
    except OSError as e:
        raise SystemExit(f"{path}: cannot read it: {e.strerror}")
    name = path or "the King James Version"
    if len(data) < least:
        raise SystemExit(f"{name}: {len(data)} bytes; at least {least} wanted")
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    cut = int((1 - HELD_OUT) * len(tensor))
    return tensor[:cut], tensor[cut:]
