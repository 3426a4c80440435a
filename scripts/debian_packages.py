"""Debian packages fetched from the archive and unpacked into a folder, for the scripts that
build evaluation corpora and the analyzer's tables (`debian_docs.py`, `man_pages.py`,
`han_variants.py`). Only Debian's archive is asked, through `apt-get download`.
"""

import pathlib
import subprocess


def fetch(packages, into):
    """Downloads the `.deb` files of `packages` into the folder `into`; returns their paths."""
    subprocess.run(["apt-get", "download", "-q", *packages], cwd=into, check=True, stdout=subprocess.DEVNULL)
    return sorted(pathlib.Path(into).glob("*.deb"))


def unpack(debs, into):
    """Unpacks each of the `.deb` files `debs` into the folder `into`, as `dpkg` would install them."""
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True)
    return pathlib.Path(into)
