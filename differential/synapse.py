"""Runs Apache Synapse 3.0.1 (from the jars setup.sh fetched) on a Synapse configuration.

`python3 differential/synapse.py CONFIG [--port N] [--endpoint NAME=URL ...]` starts Synapse on CONFIG (a
synapse.xml, or a folder of Synapse XML files such as conformance/<suite>/synapse) and serves until
interrupted. record.py uses the same functions to run a suite.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "3.0.1"
CACHE = os.environ.get(
    "SLUICE_SYNAPSE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "sluice-synapse")
)
HOME = os.path.join(CACHE, VERSION)

# Java 17 runs Synapse 3.0.1 (built for Java 8) with these. Each is explained in README.md.
JVM_FLAGS = [
    "-Xms256m",
    "-Xmx512m",
    # As Synapse's own synapse.sh starts it: Xerces caches the grammars the validate mediator loads.
    "-Dorg.apache.xerces.xni.parser.XMLParserConfiguration="
    "org.apache.xerces.parsers.XMLGrammarCachingConfiguration",
]

READY_LINE = "Apache Synapse started successfully"
JVM_PROBLEM = re.compile(
    r"InaccessibleObjectException|IllegalAccessError|NoClassDefFoundError|ClassNotFoundException"
    r"|UnsupportedClassVersionError|illegal reflective access",
    re.I,
)


class SynapseError(Exception):
    pass


def require_setup():
    lib = os.path.join(HOME, "lib")
    if not os.path.isfile(os.path.join(HOME, "ready")):
        raise SynapseError(
            f"Synapse {VERSION} is not set up in {HOME}: run differential/synapse/setup.sh"
        )
    return lib


def java_version(java):
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0] if out else "unknown"


# ---------------------------------------------------------------------------------------------------
# The configuration: one synapse.xml, with the named endpoints re-pointed.

_ROOT = re.compile(r"<(?!\?|!)([\w.-]+:)?([\w.-]+)([^>]*)>", re.S)
_NSDECL = re.compile(r"""\bxmlns(:[\w.-]+)?\s*=\s*("[^"]*"|'[^']*')""")


def _xml_files(path):
    if os.path.isfile(path):
        return [path]
    found = []
    for d, _, names in os.walk(path):
        found += [os.path.join(d, n) for n in names if n.endswith(".xml")]
    return sorted(found)


def _parts(text, name):
    """(namespace declarations of a <definitions> root, its content), or ({}, the whole element)."""
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    m = _ROOT.search(re.sub(r"<!--.*?-->", lambda c: " " * len(c.group()), text, flags=re.S))
    if m is None:
        raise SynapseError(f"{name}: no root element")
    if m.group(2) != "definitions":
        return {}, text
    decls = {(p or ""): v[1:-1] for p, v in _NSDECL.findall(m.group(3))}
    end = text.rfind("</")
    return decls, text[m.end() : end]


def merged_config(path):
    """The Synapse configuration at `path` as the text of one synapse.xml."""
    files = _xml_files(path)
    if not files:
        raise SynapseError(f"{path}: no Synapse XML files")
    if len(files) == 1:
        with open(files[0], encoding="utf-8") as f:
            return f.read()
    decls = {"": "http://ws.apache.org/ns/synapse"}
    body = []
    for name in files:
        with open(name, encoding="utf-8") as f:
            d, content = _parts(f.read(), name)
        for prefix, uri in d.items():
            if decls.setdefault(prefix, uri) != uri:
                raise SynapseError(f"{name}: prefix '{prefix}' is bound to two namespaces")
        body.append(f"<!-- {os.path.relpath(name, path)} -->\n{content}\n")
    attrs = "".join(
        f' xmlns{":" + p if p else ""}="{u}"' for p, u in sorted(decls.items())
    )
    return f"<definitions{attrs}>\n{''.join(body)}</definitions>\n"


def repoint(config, name, url):
    """`config` with endpoint `name`'s address (or http uri-template, or template uri) set to `url`,
    as Sluice's `--endpoint NAME=URL` does. The endpoint is a named one or a local entry holding one."""
    quoted = r"\s*=\s*[\"']" + re.escape(name) + r"[\"'][^>]*>"
    start = re.search(r"<(?:[\w.-]+:)?endpoint\b[^>]*?\bname" + quoted, config) or re.search(
        r"<(?:[\w.-]+:)?localEntry\b[^>]*?\bkey" + quoted, config
    )
    if start is None:
        raise SynapseError(f"no endpoint named '{name}'")
    tag = start.group()
    uri = re.search(r"\buri\s*=\s*(\"[^\"]*\"|'[^']*')", tag)
    if uri:
        new_tag = tag[: uri.start(1)] + f'"{url}"' + tag[uri.end(1) :]
        return config[: start.start()] + new_tag + config[start.end() :]
    inner = re.compile(
        r"<(?:[\w.-]+:)?(?:address\b[^>]*?\buri|http\b[^>]*?\buri-template)\s*=\s*(\"[^\"]*\"|'[^']*')"
    )
    m = inner.search(config, start.end())
    element = tag.split()[0].split(":")[-1].lstrip("<")
    close = config.find(f"{element}>", start.end())
    if m is None or (close != -1 and m.start() > close):
        raise SynapseError(f"endpoint '{name}' has no address or http uri to re-point")
    return config[: m.start(1)] + f'"{url}"' + config[m.end(1) :]


# ---------------------------------------------------------------------------------------------------
# The process.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rewrite_tree(root, rewrite):
    """Replaces each (old, new) of `rewrite` in every file under `root` that is UTF-8 text (the
    samples' registry resources name the back-end's address too)."""
    if not rewrite:
        return
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            new_text = text
            for old, new in rewrite:
                new_text = new_text.replace(old, new)
            if new_text != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new_text)


def zip_libraries(libs):
    """Zips each unpacked library folder in `libs` (a home's synapse-libs) beside it: Synapse
    loads only `*.zip` files there, `artifacts.xml` at the zip's root; Sluice reads either."""
    if not os.path.isdir(libs):
        return
    for name in sorted(os.listdir(libs)):
        folder = os.path.join(libs, name)
        if not os.path.isdir(folder):
            continue
        with zipfile.ZipFile(folder + ".zip", "w") as z:
            for d, _, files in sorted(os.walk(folder)):
                for f in sorted(files):
                    path = os.path.join(d, f)
                    z.write(path, os.path.relpath(path, folder))


class Synapse:
    """A Synapse process on a prepared copy of a configuration; `stop()` ends it."""

    def __init__(self, config_text, port=None, java="java", run_dir=None, home=None, rewrite=None):
        lib = require_setup()
        self.port = port or free_port()
        self.dir = run_dir or tempfile.mkdtemp(prefix="sluice-synapse-run-")
        repo = os.path.join(self.dir, "repository")
        conf = os.path.join(repo, "conf")
        os.makedirs(conf, exist_ok=True)
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        shutil.copytree(os.path.join(HOME, "modules"), os.path.join(repo, "modules"), dirs_exist_ok=True)
        # A SYNAPSE_HOME's files (the samples' repository/conf/sample/resources), under the run
        # folder, which is Synapse's home and working directory.
        if home is not None:
            shutil.copytree(home, self.dir, dirs_exist_ok=True, symlinks=False)
            rewrite_tree(self.dir, rewrite)
            zip_libraries(os.path.join(conf, "synapse-libs"))
        with open(os.path.join(HERE, "synapse", "axis2.xml"), encoding="utf-8") as f:
            axis2 = f.read().replace("@PORT@", str(self.port))
        with open(os.path.join(conf, "axis2.xml"), "w", encoding="utf-8") as f:
            f.write(axis2)
        shutil.copy(os.path.join(HERE, "synapse", "log4j.properties"), conf)
        # The blocking client (callout, forwarding processor) reads this from the working folder.
        shutil.copy(os.path.join(HERE, "synapse", "axis2_blocking_client.xml"), conf)
        self.synapse_xml = os.path.join(conf, "synapse.xml")
        with open(self.synapse_xml, "w", encoding="utf-8") as f:
            f.write(config_text)
        self.log_path = os.path.join(self.dir, "synapse.log")
        cmd = [java, *JVM_FLAGS, f"-Djava.io.tmpdir={os.path.join(self.dir, 'tmp')}"]
        cmd += ["-cp", f"{conf}:{lib}/*", "org.apache.synapse.SynapseServer"]
        cmd += [repo, os.path.join(conf, "axis2.xml"), self.dir, self.synapse_xml, repo]
        self.command = cmd
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd, cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_ready(self, within=180):
        """Returns once Synapse says it started and its port accepts a connection; raises if it exits
        or does not within `within` seconds."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                code = self.proc.wait(timeout=0.2)
                raise SynapseError(f"Synapse exited ({code}); its log:\n{self.log()[-4000:]}")
            except subprocess.TimeoutExpired:
                pass
            if READY_LINE in self.log():
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    pass
        self.stop(keep_dir=True)
        raise SynapseError(f"Synapse did not start within {within} s; its log:\n{self.log()[-4000:]}")

    def errors(self):
        """The ERROR lines of Synapse's log so far, for the golden."""
        lines = self.log().splitlines()
        return [l for l in lines if " ERROR " in l]

    def jvm_problems(self):
        """Log lines that say the JVM refused something Synapse did (Java 17's module checks, a class
        missing from the class path), once each."""
        found = []
        for line in self.log().splitlines():
            m = JVM_PROBLEM.search(line)
            if m and m.group() + line[m.end() : m.end() + 120] not in found:
                found.append(m.group() + line[m.end() : m.end() + 120])
        return found

    def stop(self, keep_dir=False):
        """Ends Synapse; removes its run folder unless `keep_dir` (the log helps when a run failed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", help="a synapse.xml, or a folder of Synapse XML files")
    ap.add_argument("--port", type=int, default=8280)
    ap.add_argument("--endpoint", action="append", default=[], metavar="NAME=URL")
    args = ap.parse_args()
    text = merged_config(args.config)
    for e in args.endpoint:
        name, _, url = e.partition("=")
        text = repoint(text, name, url)
    syn = Synapse(text, port=args.port)
    # Started in the background by a non-interactive shell, SIGINT is ignored; SIGTERM ends it too.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        syn.wait_ready()
        print(f"synapse listening on http://127.0.0.1:{syn.port} (log: {syn.log_path})", flush=True)
        syn.proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        syn.stop()


if __name__ == "__main__":
    try:
        main()
    except SynapseError as e:
        sys.exit(f"synapse: {e}")
