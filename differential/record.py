"""Records what Apache Synapse answers to a conformance suite's cases.

`differential/record.sh SUITE [--case NAME]...` starts Synapse on conformance/SUITE/synapse, with the
endpoints the suite's cases.json names re-pointed at a local echo back-end (echo.py), sends each case's
request, and writes conformance/SUITE/synapse-golden.json. crates/sluice/tests/differential.rs compares
Sluice's answers with it.
"""

import argparse
import datetime
import http.client
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo  # noqa: E402
import synapse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# How long a case waits for Synapse's answer. Synapse leaves some requests unanswered (an onError
# sequence that sends nothing); the golden says so.
ANSWER_WITHIN = 10
# Seconds to wait after the answer for back-end calls made after it (a clone's copies still
# running when its aggregate answered): as long as the Rust test waits.
LATE_CALLS_WITHIN = 3
# Each suite runs on this many fresh Synapses; a part answered otherwise in one of them is unstable.
RUNS = 3
# The Synapse samples (a suite's "synapse_sample": N), their SYNAPSE_HOME, and the answers of
# their back-end, SimpleStockQuoteService.
SAMPLES = os.path.join(ROOT, "conformance", "third_party", "synapse-samples")
STOCKQUOTE = os.path.join(ROOT, "conformance", "stockquote.json")
# Where the samples' configurations send: SimpleStockQuoteService on port 9000, and the Axis2
# servers 9001 to 9003 of the load-balance and failover samples. All go to the one back-end.
SAMPLE_BACKENDS = [f"http://localhost:{p}" for p in (9000, 9001, 9002, 9003)]


def headers_that_matter(case):
    """Content-Type and every header the case's expectations name, lower-case."""
    expect = case.get("expect", {})
    names = {"content-type"}
    names.update(k.lower() for k in expect.get("headers", {}))
    names.update(k.lower() for k in expect.get("absent", []))
    return sorted(names)


def send(port, req, backend):
    """(status, {header: value}, body bytes) as Synapse answered `req`, or None without an answer.
    The request is written as the Rust test's client writes it: Host, the case's headers, and a
    Content-Length unless it is a GET or HEAD without a body. `{backend}` in the body and header
    values stands for the back-end's address (host:port)."""
    method = req.get("method", "POST")
    body = req.get("body", "").replace("{backend}", backend).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_WITHIN)
    try:
        conn.putrequest(method, req["path"], skip_host=True, skip_accept_encoding=True)
        conn.putheader("host", f"127.0.0.1:{port}")
        for k, v in req.get("headers", {}).items():
            conn.putheader(k, v.replace("{backend}", backend))
        if body or method not in ("GET", "HEAD"):
            conn.putheader("content-length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        heads = {}
        for k, v in r.getheaders():
            k = k.lower()
            heads[k] = f"{heads[k]}, {v}" if k in heads else v
        return r.status, heads, data
    except (TimeoutError, ConnectionError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def record_case(syn, be, case):
    before = be.count()
    log_from = len(syn.log())
    got = send(syn.port, case["request"], be.url.split("/")[2])
    entry = {"name": case["name"]}
    if got is None:
        entry["no_answer"] = f"no complete answer within {ANSWER_WITHIN} s"
    else:
        status, heads, data = got
        entry["status"] = status
        entry["headers"] = {k: heads.get(k) for k in headers_that_matter(case)}
        entry["body"] = data.decode("utf-8", errors="replace")
    # The calls the case expects of Sluice may come after the answer: wait for them (up to
    # LATE_CALLS_WITHIN), so that Synapse's late calls count in this case, not the next.
    want = (case.get("backend") or {}).get("count") or 0
    deadline = time.monotonic() + LATE_CALLS_WITHIN
    while be.count() - before < want and time.monotonic() < deadline:
        time.sleep(0.02)
    entry["backend_count"] = be.count() - before
    errors = [
        line.split(" ", 2)[2]
        for line in syn.log()[log_from:].splitlines()
        if " ERROR " in line or " WARN " in line
    ]
    if errors:
        entry["synapse_log"] = errors
    return entry


def _ignore_rules():
    with open(os.path.join(ROOT, "differential", "ignore.json"), encoding="utf-8") as f:
        return [(re.compile(r["pattern"]), r["replace"]) for r in json.load(f)["rules"]]


IGNORE = _ignore_rules()


def ignored(text):
    """`text` with what ignore.json leaves out replaced, as the Rust test replaces it: a message
    id new in each run does not make a part unstable."""
    if text is None:
        return None
    for pattern, replace in IGNORE:
        text = pattern.sub(replace, text)
    return text


def parts(entry):
    """A recorded answer as the parts the Rust test compares, named as it names them."""
    out = {"answer": "no_answer" not in entry, "backend_count": entry["backend_count"]}
    if "no_answer" not in entry:
        out["status"] = entry["status"]
        out["body"] = ignored(entry["body"])
        out.update({f"header {k}": ignored(v) for k, v in entry["headers"].items()})
    return out


def merge_runs(runs):
    """The first run's answers; where a later run answered a case otherwise, the case's `unstable`
    names each part that changed with every value seen, and the test does not compare that part."""
    merged = runs[0]
    for i, entry in enumerate(merged):
        seen = [parts(run[i]) for run in runs]
        unstable = {}
        for part in sorted(set().union(*seen)):
            values = []
            for s in seen:
                if s.get(part) not in values:
                    values.append(s.get(part))
            if len(values) > 1:
                unstable[part] = values
        if unstable:
            entry["unstable"] = unstable
    return merged


def run_once(suite_dir, spec, cases):
    """Synapse's answers to `cases`, from a Synapse started for this run, with the errors it logged
    while starting and the JVM's refusals (jvm_problems)."""
    sample = spec.get("synapse_sample")
    if sample is None:
        be = echo.EchoServer()
        config = synapse.merged_config(os.path.join(suite_dir, "synapse"))
        home = rewrite = None
    else:
        # A sample as Synapse ships it, its back-end address moved to the stock quote back-end.
        be = echo.EchoServer(echo.load_answers(STOCKQUOTE))
        path = os.path.join(SAMPLES, "samples", f"synapse_sample_{sample}.xml")
        rewrite = [(old, be.url.rsplit("/", 1)[0]) for old in SAMPLE_BACKENDS]
        with open(path, encoding="utf-8") as f:
            config = f.read()
        for old, new in rewrite:
            config = config.replace(old, new)
        # Where a sample names the back-end by its parts (sample 452's rewrite sets host and port).
        host, port = be.url.split("/")[2].rsplit(":", 1)
        for old, new in spec.get("sample_replace", []):
            new = new.replace("{backend_host}", host).replace("{backend_port}", port)
            config = config.replace(old, new)
        home = os.path.join(SAMPLES, "home")
    for name in spec.get("endpoints", []):
        config = synapse.repoint(config, name, be.url)
    syn = synapse.Synapse(config, home=home, rewrite=rewrite)
    done = False
    try:
        syn.wait_ready()
        startup = syn.errors()
        results = [record_case(syn, be, c) for c in cases]
        jvm = syn.jvm_problems()
        done = True
    finally:
        syn.stop(keep_dir=not done)
        be.shutdown()
        if not done:
            print(f"record: Synapse's log is in {syn.log_path}", file=sys.stderr)
    return {"startup": startup, "jvm": jvm, "results": results}


def record(suite, only, runs):
    suite_dir = os.path.join(ROOT, "conformance", suite)
    with open(os.path.join(suite_dir, "cases.json"), encoding="utf-8") as f:
        spec = json.load(f)
    cases = [c for c in spec["cases"] if not only or c["name"] in only]
    missing = set(only) - {c["name"] for c in cases}
    if missing:
        raise synapse.SynapseError(f"no case named {sorted(missing)} in {suite}")
    recorded = [run_once(suite_dir, spec, cases) for _ in range(runs)]
    startup = recorded[0]["startup"]
    jvm = sorted({p for r in recorded for p in r["jvm"]})
    results = merge_runs([r["results"] for r in recorded])
    args = [suite] + [f"--case '{n}'" for n in only] + ([f"--runs {runs}"] if runs != RUNS else [])
    command = "differential/record.sh " + " ".join(args)
    return {
        "recorded_with": command,
        "synapse": f"Apache Synapse {synapse.VERSION} (Maven Central jars, differential/synapse)",
        "java": synapse.java_version("java"),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "startup_log": [l.split(" ", 2)[2] for l in startup],
        # Empty when Java 17 let Synapse do all it tried (see differential/README.md, JVM flags).
        "jvm_problems": jvm,
        "cases": results,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", help="a folder under conformance/")
    ap.add_argument("--case", action="append", default=[], help="record only this case (repeatable)")
    ap.add_argument("--runs", type=int, default=RUNS, help=f"Synapse runs to compare (default {RUNS})")
    ap.add_argument("--stdout", action="store_true", help="print the golden instead of writing it")
    args = ap.parse_args()
    golden = record(args.suite, args.case, max(args.runs, 1))
    text = json.dumps(golden, indent=2, ensure_ascii=False) + "\n"
    if args.stdout:
        sys.stdout.write(text)
        return
    out = os.path.join(ROOT, "conformance", args.suite, "synapse-golden.json")
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{out}: {len(golden['cases'])} cases recorded")


if __name__ == "__main__":
    try:
        main()
    except synapse.SynapseError as e:
        sys.exit(f"record: {e}")
