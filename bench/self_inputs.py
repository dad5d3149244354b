#!/usr/bin/env python3
"""Fixed inputs for bench/self.sh: the same bytes on every machine and every run.

The spans are those `evalbench sample` writes with one worker (the server's
scheduler, jobs and graph writer; the worker's jobs, waves and log uploads;
one eval process per job resolving its derivations), in the order and
nesting the sample's processes produce them, with hand-offs named as the
contract names them (job_id). With one worker the sample's pipeline is
sequential, so its shape is fixed by (jobs, derivations); only its timings
vary from run to run. Here they are drawn from a seeded generator instead,
so that evalbench's own instruction count over them depends on evalbench
alone (a real sample's timings move the critical path's work by a percent
or two from one generation to the next, more than the 3% the baseline
allows).

    python3 bench/self_inputs.py OUT [JOBS DRVS RUNS]

writes OUT/a and OUT/b (two bundles: cold-clean and warm-clean, RUNS runs
each; B's resolve and record_one 10% slower) and OUT/pg.pcap (the
committed real capture of the lab's PostgreSQL traffic, repeated 40 times).
"""
import json
import math
import os
import random
import struct
import sys

WAVE = 64
BATCH_STEPS = ["lock_seed_shared_builds", "became_fetchable", "seed_blocking_deps", "promote",
               "unpromote_ungated", "emit_transition_effects", "move_batch_need"]
SCHED, JOBS_T, GRAPH, W, E = ("gradient_server::scheduler", "gradient_server::jobs",
                              "gradient_graph::writer", "gradient_worker", "gradient_eval")


class Proc:
    """One process's span file: spans opened with ids in opening order, written in closing order."""

    def __init__(self, name, pid, host):
        self.name, self.pid, self.host, self.next_id, self.spans = name, pid, host, 1, []

    def span(self, name, target, start, dur, parent=None, thread=None, **fields):
        sid = self.next_id
        self.next_id += 1
        s = {"name": name, "target": target, "ts_us": start, "dur_us": max(1, dur), "pid": self.pid,
             "process": self.name, "host": self.host, "id": sid}
        if parent is not None:
            s["parent"] = parent
        s["thread"] = thread or self.pid
        s["fields"] = fields
        self.spans.append(s)
        return sid

    def lines(self):
        # Closing order: by end, a child (opened later) before its parent on a tie.
        order = sorted(self.spans, key=lambda s: (s["ts_us"] + s["dur_us"], -s["id"]))
        return "".join(json.dumps(s, separators=(",", ":")) + "\n" for s in order)


def run(out, pass_name, seed, jobs, drvs, slower, cold):
    r = random.Random(seed)

    def d(median):
        """A duration around `median` µs, lognormal (sigma 0.15)."""
        return max(1, round(median * math.exp(0.15 * r.gauss(0, 1))))

    base = 1_800_000_000_000_000 + seed * 10_000_000
    server, worker = Proc("server", 4000, "server"), Proc("worker", 4100, "worker-0")
    graph_thread = 4001
    evals = []
    statuses = []
    t = base
    requested = t
    t += d(200)
    statuses.append(("Queued", t))
    server.span("assign_queued_evals", SCHED, t, d(50), evaluation=f"eval-{seed}", jobs=jobs)
    t += d(60)
    server.span("offer_jobs", SCHED, t, d(300), jobs=jobs, workers=1)
    t += d(320)
    root = worker.span("on_job_offer", W, t, 0, jobs=jobs)
    t0 = t
    worker.span("score_candidates", W, t + 10, d(20), root, candidates=jobs)
    worker.span("send_scores", W, t + 40, d(40), root, count=jobs)
    worker.span("request_job", W, t + 90, d(15), root, after="offer")
    t += 130
    worker.spans[-4]["dur_us"] = t - t0
    s = server.span("on_request_job_chunk", SCHED, t + 20, 25, worker=0)
    server.span("record_scores", SCHED, t + 30, d(4), s, count=jobs)
    t += 60
    server_free = t
    for k in range(jobs):
        job = f"eval-{seed}-job{k}"
        # The server assigns the job.
        t = max(t, server_free)
        a0 = t
        ro = server.span("on_request_job", SCHED, a0, 0, worker=0)
        rq = server.span("request_job", SCHED, a0 + 4, 0, ro, worker=0)
        server.span("claim_dispatch", SCHED, a0 + 8, d(2), rq, queued=jobs - k)
        server.span("send_credentials", SCHED, a0 + 14, d(3), rq, job_id=job)
        if k == 0:
            statuses.append(("EvaluatingFlake", a0 + 20))
        aj = d(25)
        server.span("assign_job", SCHED, a0 + 22, aj, rq, job_id=job, worker=0)
        t = a0 + 22 + aj
        server.spans[-4]["dur_us"] = t - (a0 + 4)
        server.spans[-5]["dur_us"] = t + 4 - a0
        # The worker runs it.
        t += d(150)
        j0 = t
        jid = worker.span("job", W, j0, 0, job_id=job, shard=k)
        fr = worker.span("fetch_repository", W, t + 5, 0, jid, repo="sample")
        f0 = t + 5
        t += 8
        for step in ["clone_and_checkout", "run_input_update", "fetch_inputs", "missing_paths"]:
            dur = d(200)
            worker.span(step, W, t, dur, fr)
            t += dur + 8
        worker.spans[fr - 1]["dur_us"] = t - f0
        ef0 = t + 8
        efid = worker.span("evaluate_flake", W, ef0, 0, jid, job_id=job)
        # The eval process: lock, discover, plan, resolve each attribute.
        ev = Proc("eval", 4200 + k, "worker-0")
        e = ef0 + d(600)
        op = ev.span("open", E, e, 0, job_id=job)
        o0 = e
        lk = d(650 if cold else 300)
        ev.span("lock_flake", E, e + 30, lk, op, cached=not cold)
        e += 30 + lk + 20
        ev.span("discover", E, e, d(15), op, attrs=drvs)
        e += 20
        ev.span("plan_shards", E, e, d(2), op, shards=1)
        e += 15
        for i in range(drvs):
            rd = d((50 if cold else 8) * slower)
            ev.span("resolve", E, e, rd, op, attr=f"packages.x86_64-linux.pkg{k}_{i}")
            e += rd + d(4)
        ev.spans[op - 1]["dur_us"] = e + 30 - o0
        evals.append(ev)
        t = e + d(800)
        worker.spans[efid - 1]["dur_us"] = t - ef0
        # Waves: parse, ask the server what it knows, report.
        ed0 = t + 5
        edid = worker.span("evaluate_derivations", W, ed0, 0, jid, drvs=drvs)
        t = ed0 + 4
        waves = [min(WAVE, drvs - i) for i in range(0, drvs, WAVE)]
        for n, size in enumerate(waves):
            last = n + 1 == len(waves)
            w0 = t
            wid = worker.span("wave", W, w0, 0, edid, n=n, drvs=size)
            pd = d(2 * size)
            worker.span("parse_drv_wave", W, t + 4, pd, wid, drvs=size)
            t += 4 + pd + 6
            q0 = t
            # The server answers once it has finished the wave before.
            s0 = max(t + d(60), server_free)
            kd = d(20 * size)
            server.span("known_derivations", JOBS_T, s0, kd, asked=size, known=0)
            server_free = s0 + kd
            t = server_free + d(60)
            worker.span("query_known_derivations", W, q0, t - q0, wid, drvs=size)
            rr = d(50)
            worker.span("report_eval_result", W, t, rr, wid, job_id=job, drvs=size)
            sent = t + rr
            t = sent + 4
            worker.spans[wid - 1]["dur_us"] = t - w0
            # The server handles the result: the graph writer records the wave.
            h0 = max(sent + d(40), server_free)
            if not any(s == "EvaluatingDerivation" for s, _ in statuses):
                statuses.append(("EvaluatingDerivation", h0 + 10))
            je = server.span("job_event", JOBS_T, h0, 0, job_id=job, kind="eval_result", queue_wait_us=h0 - sent)
            he = server.span("handle_eval_result", JOBS_T, h0 + 5, 0, je, job_id=job, drvs=size)
            ac = d(6 * size)
            server.span("assess_cached", JOBS_T, h0 + 10, ac, he, drvs=size)
            rc0 = h0 + 10 + ac + 5
            rc = server.span("record", GRAPH, rc0, 0, he, job_id=job, rows=size)
            g = rc0 + d(30)
            fl = server.span("flush", GRAPH, g, 0, None, graph_thread, batches=1, rows=size)
            fl0 = g
            tr = server.span("transact_once", GRAPH, g + 5, 0, fl, graph_thread, attempt=1)
            ap = server.span("apply_batch", GRAPH, g + 10, 0, tr, graph_thread, rows=size)
            g += 14
            for i in range(size):
                dr = d(3 * slower)
                server.span("record_one", GRAPH, g, dr, ap, graph_thread, drv=f"/nix/store/{k:04x}{n:04x}{i:08x}-pkg{k}_{n * WAVE + i}.drv")
                g += dr + 2
            adv = server.span("advance_can_start", GRAPH, g, 0, ap, graph_thread, rows=size)
            a0 = g
            g += 4
            for step in BATCH_STEPS:
                sd = d(3)
                server.span(step, GRAPH, g, sd, adv, graph_thread)
                g += sd + 2
            server.spans[adv - 1]["dur_us"] = g - a0
            for i in range(size):
                cd = d(2)
                server.span("commit_one", GRAPH, g, cd, ap, graph_thread, drv=f"/nix/store/{k:04x}{n:04x}{i:08x}-pkg{k}_{n * WAVE + i}.drv")
                g += cd + 2
            server.spans[ap - 1]["dur_us"] = g - (fl0 + 10)
            server.spans[tr - 1]["dur_us"] = g + 3 - (fl0 + 5)
            g += 5
            ad = d(50)
            server.span("after_commit", GRAPH, g, ad, fl, graph_thread, batches=1)
            g += ad + 4
            server.spans[fl - 1]["dur_us"] = g - fl0
            h = g + d(20)
            server.spans[rc - 1]["dur_us"] = h - rc0
            if last:
                server.span("eval_stream_completed", JOBS_T, h + 3, d(4), he, job_id=job)
                h += 10
            server.spans[he - 1]["dur_us"] = h + 3 - (h0 + 5)
            server.spans[je - 1]["dur_us"] = h + 6 - h0
            server_free = h + 8
        worker.spans[edid - 1]["dur_us"] = t - ed0
        worker.spans[jid - 1]["dur_us"] = t + 4 - j0
        t += 10
        worker.span("upload_logs", W, t + 100, d(160), thread=4102 + k, job_id=job)
        worker.span("request_job", W, t, d(370), after="job")
        t += d(60)
    statuses.append(("Building", server_free + d(90)))
    statuses.append(("Completed", statuses[-1][1] + d(200)))
    left = statuses[3][1]
    pdir = os.path.join(out, pass_name)
    os.makedirs(os.path.join(pdir, "trace"), exist_ok=True)
    info = {
        "pass": pass_name, "evaluation_id": f"eval-{seed}", "eval_id": f"eval-{seed}", "cold": cold,
        "instrumented": False, "status": "Completed",
        "statuses": [{"status": s, "ts_us": ts} for s, ts in statuses],
        "evaluated_s": round((left - requested) / 1e6, 6), "requested_us": requested, "captures": ["spans"],
        "evaluation_metric": {"derivations": jobs * drvs, "jobs": jobs, "server_wall_ms": (left - requested) // 1000, "workers": 1},
    }
    with open(os.path.join(pdir, "run.json"), "w") as f:
        json.dump(info, f, indent=2)
    for p in [server, worker] + evals:
        with open(os.path.join(pdir, "trace", f"{p.name}-{p.pid}.jsonl"), "w") as f:
            f.write(p.lines())
    return sum(len(p.spans) for p in [server, worker] + evals)


def bundle(out, side, jobs, drvs, runs, slower):
    spans = 0
    for p, cold in [("cold-clean", True), ("warm-clean", False)]:
        for k in range(1, runs + 1):
            name = p if k == 1 else f"{p}.{k}"
            seed = (1 if side == "a" else 2) * 1000 + (0 if cold else 500) + k
            spans += run(out, name, seed, jobs, drvs, slower, cold)
    return spans


def repeat_pcap(src, dst, times):
    """A pcap of `times` copies of src's packets, as mergecap -a writes it."""
    data = open(src, "rb").read()
    header, body = data[:24], data[24:]
    magic = struct.unpack("<I", header[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit(f"{src}: not a little-endian pcap (magic {magic:#x})")
    with open(dst, "wb") as f:
        f.write(header)
        for _ in range(times):
            f.write(body)


def main():
    out = sys.argv[1]
    jobs, drvs, runs = (int(x) for x in (sys.argv[2:5] if len(sys.argv) >= 5 else (4, 1000, 3)))
    os.makedirs(out, exist_ok=True)
    a = bundle(os.path.join(out, "a"), "a", jobs, drvs, runs, 1.0)
    b = bundle(os.path.join(out, "b"), "b", jobs, drvs, runs, 1.1)
    here = os.path.dirname(os.path.abspath(__file__))
    repeat_pcap(os.path.join(here, "..", "crates", "evalbench", "tests", "data", "captures", "pg.pcap"), os.path.join(out, "pg.pcap"), 40)
    print(f"{a} spans in a, {b} in b")


if __name__ == "__main__":
    main()
