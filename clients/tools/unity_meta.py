"""Writes Unity .meta files with stable GUIDs (md5 of the package-relative path) for a UPM package.

Unity ignores assets without a .meta file in immutable (git or registry) packages, and random GUIDs
would make generation non-deterministic, so every GUID is derived from the asset's path.
Usage: python clients/tools/unity_meta.py PACKAGE_ROOT [SUBDIR]  (writes metas for SUBDIR's entries,
SUBDIR itself included; default: the whole package). Hidden and "~" folders (Samples~) get none,
as Unity does not import them.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

_IMPORTERS = {
    ".cs": "MonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n"
    "  executionOrder: 0\n  icon: {instanceID: 0}\n",
    ".asmdef": "AssemblyDefinitionImporter:\n  externalObjects: {}\n",
    ".md": "TextScriptImporter:\n  externalObjects: {}\n",
    ".json": "TextScriptImporter:\n  externalObjects: {}\n",
}
_FOOTER = "  userData: \n  assetBundleName: \n  assetBundleVariant: \n"


def meta_text(package: Path, path: Path) -> str:
    """The .meta content for one asset (file or folder) of the package."""
    rel = path.relative_to(package).as_posix()
    guid = hashlib.md5(f"npc-memory-unity/{rel}".encode()).hexdigest()  # noqa: S324  (an id, not security)
    if path.is_dir():
        body = "folderAsset: yes\nDefaultImporter:\n  externalObjects: {}\n"
    elif path.name == "package.json":
        body = "PackageManifestImporter:\n  externalObjects: {}\n"
    else:
        body = _IMPORTERS.get(path.suffix, "DefaultImporter:\n  externalObjects: {}\n")
    return f"fileFormatVersion: 2\nguid: {guid}\n{body}{_FOOTER}"


def write_metas(package: Path, subdir: Path) -> None:
    """Write a .meta beside every asset under ``subdir`` (and for ``subdir`` unless it is the root)."""
    entries = [subdir] if subdir != package else []
    entries += sorted(
        p for p in subdir.rglob("*")
        if p.suffix != ".meta" and not any(part.startswith(".") or part.endswith("~") for part in p.parts)
    )
    for path in entries:
        path.with_name(path.name + ".meta").write_text(meta_text(package, path), encoding="utf-8")


if __name__ == "__main__":
    root = Path(sys.argv[1])
    write_metas(root, root / sys.argv[2] if len(sys.argv) > 2 else root)
