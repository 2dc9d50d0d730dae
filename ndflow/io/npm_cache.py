"""npm packages in a local cache: registry metadata, tarball download, integrity check, safe unpacking.

A package version lives in ``<root>/npm/<name>/<version>/`` (``<root>``: the ``cache_dir`` argument, else
``$NDFLOW_CACHE_DIR``, else ``~/.cache/ndflow``), holding the tarball's files without npm's leading
``package/`` folder. A version folder appears only complete: the tarball is downloaded to a temporary file,
checked against the registry's ``dist.integrity`` (``dist.shasum`` when there is none), unpacked into a
temporary folder beside the final one and renamed into place. Of two processes racing, the one whose rename
fails removes its copy and uses the other's. Any failure removes what it wrote.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

DEFAULT_REGISTRY = "https://registry.npmjs.org"
TIMEOUT_S = 60.0
CHUNK = 1 << 20
#: The file ndflow writes into each finished version folder (what it was made from).
MARKER = ".ndflow-npm.json"
#: Accept header of npm's abbreviated metadata (dist-tags and each version's dist, nothing else).
ABBREVIATED = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"
_EXACT = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_TAG = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
_HASHES = ("sha512", "sha384", "sha256", "sha1")  # strongest first


class NpmError(ValueError):
    """A package that cannot be resolved, downloaded, verified or unpacked (one clear message)."""


class NpmUnreachableError(NpmError, ConnectionError):
    """The registry (or the tarball's host) cannot be reached."""


def registry_url() -> str:
    """The registry's base URL: ``$NDFLOW_NPM_REGISTRY``, else https://registry.npmjs.org."""
    return (os.environ.get("NDFLOW_NPM_REGISTRY") or DEFAULT_REGISTRY).rstrip("/")


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The npm cache folder: ``<cache_dir or $NDFLOW_CACHE_DIR or ~/.cache/ndflow>/npm``."""
    if cache_dir is None:
        cache_dir = os.environ.get("NDFLOW_CACHE_DIR") or Path.home() / ".cache" / "ndflow"
    return Path(os.path.expanduser(os.fspath(cache_dir))) / "npm"


def is_exact_version(version: str) -> bool:
    """Whether ``version`` is one exact semver version (``1.2.3``, ``1.2.3-rc.1``), not a tag or a range."""
    return bool(_EXACT.match(version))


def check_version(spec: str, version: str) -> None:
    """A NpmError for a version that is neither an exact version nor a dist-tag (ranges are not supported)."""
    if not (is_exact_version(version) or _TAG.match(version)):
        raise NpmError(
            f"npm package {spec!r}: version {version!r} is not an exact version (like 1.2.3) or a dist-tag "
            "(like latest); semver ranges are not supported"
        )


def version_dir(name: str, version: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where version ``version`` of package ``name`` is (or would be) unpacked."""
    return cache_root(cache_dir).joinpath(*name.split("/"), version.lstrip("v"))


def cached_versions(name: str, cache_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """The versions of ``name`` already in the cache (finished ones only)."""
    folder = cache_root(cache_dir).joinpath(*name.split("/"))
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / MARKER).is_file())


# -- the registry ----------------------------------------------------------------------------------------------


def _get(url: str, accept: str | None = None) -> Any:
    """An open urllib response for ``url`` (http(s) only); NpmError naming the URL when it cannot be reached."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise NpmError(f"refusing to download {url!r}: only http:// and https:// URLs are fetched")
    headers = {"User-Agent": "ndflow", **({"Accept": accept} if accept else {})}
    # here, not at the top: urllib.request (with http, email and ssl) is tens of ms of loading a cached model
    from urllib.request import Request, urlopen

    try:
        return urlopen(Request(url, headers=headers), timeout=TIMEOUT_S)
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise NpmUnreachableError(f"npm registry unreachable: GET {url} failed: {reason}") from None


def package_metadata(name: str) -> dict[str, Any]:
    """The registry's (abbreviated) document of package ``name``; NpmError for an unknown package."""
    url = f"{registry_url()}/{urllib.parse.quote(name, safe='@').replace('%2F', '%2f')}"  # @scope%2fname, as npm
    try:
        with _get(url, ABBREVIATED) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise NpmError(f"npm package {name!r} not found in the registry ({url}: 404)") from None
        raise NpmError(f"npm registry error: GET {url} failed with status {e.code}") from None
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise NpmError(f"npm registry: {url} did not return JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("versions"), dict):
        raise NpmError(f"npm registry: {url} returned no 'versions' object for {name!r}")
    return doc


def resolve_version(name: str, version: str, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The exact version that ``version`` (exact or a dist-tag) names in ``doc``, and its ``dist``."""
    tags = doc.get("dist-tags") or {}
    exact = version.lstrip("v") if is_exact_version(version) else tags.get(version)
    versions = doc["versions"]
    if exact not in versions:
        have = list(versions)[-8:]
        tag_list = ", ".join(f"{k}={v}" for k, v in list(tags.items())[:5])
        raise NpmError(
            f"npm package {name!r} has no version {version!r} (exact versions and dist-tags only, no ranges); "
            f"available: {', '.join(have) or 'none'}" + (f"; dist-tags: {tag_list}" if tag_list else "")
        )
    dist = versions[exact].get("dist") or {}
    if not isinstance(dist.get("tarball"), str):
        raise NpmError(f"npm package {name}@{exact}: the registry gives no dist.tarball")
    return exact, dist


# -- download and verify ---------------------------------------------------------------------------------------


def _expected_digest(dist: dict[str, Any]) -> tuple[str, str, str]:
    """(algorithm, expected digest, how it reads in dist) from ``dist.integrity`` (SRI), else ``dist.shasum``."""
    found: dict[str, str] = {}
    for item in str(dist.get("integrity") or "").split():
        algo, _, b64 = item.partition("-")
        if algo in _HASHES and b64:
            found.setdefault(algo, b64.split("?")[0])
    for algo in _HASHES:
        if algo in found:
            return algo, found[algo], f"{algo}-{found[algo]}"
    shasum = str(dist.get("shasum") or "").strip().lower()
    if re.fullmatch(r"[0-9a-f]{40}", shasum):
        return "sha1", base64.b64encode(bytes.fromhex(shasum)).decode(), f"shasum {shasum}"
    raise NpmError("the registry gives neither dist.integrity nor dist.shasum: refusing an unverifiable tarball")


def download(url: str, dest: Path, dist: dict[str, Any], what: str) -> None:
    """Stream ``url`` into the file ``dest`` and check it against ``dist``'s integrity (NpmError on mismatch)."""
    algo, want, shown = _expected_digest(dist)
    digest = hashlib.new(algo)
    try:
        with _get(url) as r, open(dest, "wb") as f:
            while chunk := r.read(CHUNK):
                digest.update(chunk)
                f.write(chunk)
    except urllib.error.HTTPError as e:
        raise NpmError(f"{what}: downloading {url} failed with status {e.code}") from None
    except (urllib.error.URLError, OSError) as e:
        if isinstance(e, NpmError):
            raise
        raise NpmError(f"{what}: downloading {url} failed: {getattr(e, 'reason', None) or e}") from None
    got = base64.b64encode(digest.digest()).decode()
    if got != want:
        raise NpmError(
            f"{what}: integrity check failed for {url}: the registry says {shown}, the download has {algo}-{got}"
        )


# -- unpack ------------------------------------------------------------------------------------------------------


def _inside(root: str, rel: str, what: str, member: str) -> str:
    """``root/rel`` after checking that ``rel`` (a tar path with the top folder removed) stays inside ``root``."""
    clean = posixpath.normpath(rel)
    if rel.startswith("/") or clean == ".." or clean.startswith("../") or "\\" in rel or "\x00" in rel:
        raise NpmError(f"{what}: tarball member {member!r} would land outside the package folder; refusing it")
    return os.path.join(root, *clean.split("/"))


def _strip_top(name: str) -> str:
    """A member's path without npm's leading folder (``package/``, whatever its name), as npm unpacks it."""
    parts = name.replace("\\", "/").split("/", 1)
    return parts[1] if len(parts) == 2 else ""


def unpack(tarball: Path, into: Path, what: str) -> None:
    """Unpack a package tarball into the (new, empty) folder ``into``: members are checked to stay inside it,
    links to stay inside it, device files and fifos are skipped, file modes reduced to rw-r--r-- (rwx for
    executables)."""
    root = os.path.realpath(into)
    try:
        tar = tarfile.open(tarball, "r:*")
    except (tarfile.TarError, OSError) as e:
        raise NpmError(f"{what}: the tarball cannot be read: {e}") from None
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as e:
            raise NpmError(f"{what}: the tarball is damaged: {e}") from None
        for m in members:  # every path checked before anything is written
            if m.name.startswith("/") or ".." in m.name.replace("\\", "/").split("/"):
                raise NpmError(f"{what}: tarball member {m.name!r} would land outside the package folder; refusing it")
        for m in members:
            rel = _strip_top(m.name)
            if not rel or rel in (".", "./"):
                continue
            target = _inside(root, rel, what, m.name)
            parent = os.path.dirname(target)
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            if not (m.isfile() or m.issym() or m.islnk()):
                continue  # devices, fifos: nothing a model needs
            os.makedirs(parent, exist_ok=True)
            if os.path.commonpath([root, os.path.realpath(parent)]) != root:
                raise NpmError(f"{what}: tarball member {m.name!r} is written through a link out of the package")
            if os.path.lexists(target):
                os.remove(target)
            if m.issym():
                link = m.linkname.replace("\\", "/")
                dest = os.path.realpath(os.path.join(parent, *link.split("/")))
                if link.startswith("/") or os.path.commonpath([root, dest]) != root:
                    raise NpmError(f"{what}: tarball link {m.name!r} -> {m.linkname!r} points out of the package")
                os.symlink(link, target)
            elif m.islnk():
                source = _inside(root, _strip_top(m.linkname), what, m.linkname)
                if not os.path.isfile(source):
                    raise NpmError(f"{what}: tarball hard link {m.name!r} -> {m.linkname!r} names no file before it")
                shutil.copyfile(source, target)
            else:
                src = tar.extractfile(m)
                if src is None:
                    continue
                with src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
                os.chmod(target, 0o755 if m.mode & 0o111 else 0o644)


# -- install -----------------------------------------------------------------------------------------------------


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents up to (not including) ``stop`` while they are empty."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def install(name: str, version: str, dist: dict[str, Any], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Download, verify and unpack ``name@version`` into the cache (atomically); its folder."""
    final = version_dir(name, version, cache_dir)
    if (final / MARKER).is_file():
        return final
    what = f"npm package {name}@{version}"
    root = cache_root(cache_dir)
    parent = final.parent
    created = not parent.exists()
    parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-{tag}-", dir=parent))
    try:
        tarball = work / "package.tgz"
        download(dist["tarball"], tarball, dist, what)
        staged = work / "unpacked"
        staged.mkdir()
        unpack(tarball, staged, what)
        info = {"name": name, "version": version, "tarball": dist["tarball"], "integrity": dist.get("integrity")}
        (staged / MARKER).write_text(json.dumps(info, indent=1) + "\n")
        try:
            os.rename(staged, final)
        except OSError:
            if not (final / MARKER).is_file():  # not a finished copy from a concurrent process
                raise NpmError(
                    f"{what}: {final} is in the way (a folder ndflow did not finish); remove it and try again"
                ) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        if created and not (final / MARKER).is_file():
            _remove_empty_parents(parent, root.parent)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return final
