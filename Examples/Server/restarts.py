#!/usr/bin/env python3
"""PostgreSQL restarted again and again under a caching instance: no sign-out lost.

    python3 restarts.py [N]                          # N restarts (10 by default)
    HABITAT_SERVER=PATH python3 restarts.py 25       # a habitat-server built already

One instance signs members in and out, a second caches their sessions (`--session-cache`).
Each round: a session cached at the second instance, PostgreSQL stopped at once and started
again, the session signed out at the first; the second must refuse it within 5 s. A feed that
missed a restart serves it (the bug of CHANGELOG's "a caching server instance whose link to
PostgreSQL went silent": it showed about one restart in twelve beside six busy loops, so run
this beside a load: `for i in 1 2 3 4 5 6; do (timeout 600 sh -c 'while :; do :; done' &); done`).
Not in CI: a probability, not a check; `fleet.py` checks the mechanisms (section 11).
"""
import os, subprocess, sys, time

import fleet
from throwaway_postgres import Cluster


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    os.chdir(fleet.HERE)
    binary = os.environ.get("HABITAT_SERVER")
    if not binary:
        subprocess.run(["swift", "build", "--product", "habitat-server"], check=True)
        binary = os.path.join(subprocess.run(["swift", "build", "--show-bin-path"], check=True, capture_output=True,
                                             text=True).stdout.strip(), "habitat-server")
    cluster = Cluster()
    instances = []
    try:
        cluster.start()
        cluster.sql("CREATE EXTENSION pg_stat_statements")
        upstream = fleet.Upstream()
        signer = fleet.Instance(binary, cluster.url, upstream.url, cluster.dir, 1)
        cache = fleet.Instance(binary, cluster.url, upstream.url, cluster.dir, 2, ["--session-cache"])
        instances = [signer, cache]
        time.sleep(1)   # the cache's feed listening
        served = 0
        for n in range(rounds):
            token = fleet.sign_in(signer, "ada", "analytical")
            cached = fleet.read_until_cached(cache, token, cluster)
            cluster.stop("immediate")
            time.sleep(1)
            cluster.start()
            deadline = time.time() + 20
            while time.time() < deadline and signer.request("POST", "/signout", token)[0] != 204:
                time.sleep(0.2)
            refused, deadline = False, time.time() + 5
            while time.time() < deadline and not refused:
                refused = cache.request("GET", "/me", token)[0] == 401
            served += not refused
            print(f"restart {n + 1}: cached before {cached}, the sign-out after it refused {refused}", flush=True)
        print(f"restarts.py: {rounds - served} of {rounds} sign-outs refused")
        if served:
            print(open(os.path.join(cluster.dir, "instance-2.log"), errors="replace").read()[-3000:])
            sys.exit(1)
    finally:
        for instance in instances:
            instance.kill()
        cluster.remove()


if __name__ == "__main__":
    main()
