#!/usr/bin/env python3
"""The fleet test: three instances of habitat-server sharing their sessions through a real
PostgreSQL, checked from outside, as a load balancer's clients would see them.

    python3 fleet.py            # builds the server if needed
    SWIFT_BUILD_FLAGS="--sanitize=thread --scratch-path .build-tsan" python3 fleet.py
                                # the server and the add-on's tests from another build (CI: the
                                # thread sanitizer's, and any race an instance reports fails)
    HABITAT_SERVER=PATH python3 fleet.py   # a habitat-server built already

It installs PostgreSQL from the distribution's packages when no `initdb` is found, starts a
throwaway cluster in a temporary directory on a free loopback port (trust authentication,
loopback only), a fake upstream token server, and three instances; runs the add-on's tests
(the session backend's on memory and on the cluster); checks

  1. a member signed in on instance one is known to instances two and three;
  2. 200 concurrent visits across the three instances lose no update (each answer a different
     count, 1...200);
  3. a rename on one instance is seen by the others and keeps the visits;
  4. 30 requests on three instances meeting one expired upstream token make one upstream call;
  5. killing the instance that holds a refresh lease mid-refresh ends the session at the next
     instance once the lease lapsed: the dead holder may have spent the refresh token, and no
     instance sends it again;
  6. a database that goes away answers 503 with a clear message, never a wrong member, and the
     fleet serves again once it is back;
  7. an upstream that trickles its answer past the refresh lease gets no refresh token spent
     twice across three instances: the holder gives up at its deadline (half the lease) and
     ends the session, so nobody replays its token;
  7a. an upstream that rotates the token and drops the connection without answering,
  7b. one that rotates the token and answers 500,
  7c. PostgreSQL stopped while the upstream answers (the new tokens can't be written; after the
     restart the session is ended, not refreshed again):
     each ends the session (401) and no refresh token is ever received twice by the upstream;
  8. three instances that cache sessions: a sign-out at one is refused at the others, and a
     cached read runs no statement;
  9. PostgreSQL restarted under the caches: no sign-out lost, and one read catches up;
  10. sign-in limits across the fleet: tries per name, sessions per member;
  11. a caching instance whose link to PostgreSQL goes silent (a partition: open, nothing
     passes) stops serving its copies within two heartbeats, so a sign-out it can't hear is
     refused, and caches again once the link is back;

prints the figures (and queries per request), and stops everything, whatever happens.
"""
import base64, glob, hashlib, http.server, json, os, shlex, signal, socket, subprocess, sys, threading, time
import re, urllib.request, urllib.error
from concurrent.futures import ThreadPoolExecutor

from throwaway_postgres import Cluster, free_port


def stored_key(session_id):
    """The key HabitatServerSessions stores a session under: the ID's SHA-256, base64url, unpadded."""
    return base64.urlsafe_b64encode(hashlib.sha256(session_id.encode()).digest()).decode().rstrip("=")


HERE = os.path.dirname(os.path.abspath(__file__))
LEASE_SECONDS = 3
failures = []


def check(condition, what):
    print(("  ok   " if condition else "  FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def run_quiet(command, **kwargs):
    return subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)


# MARK: The upstream: a token server that rotates refresh tokens and treats reuse as theft

class Upstream:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []           # refresh tokens presented, in order
        self.used = set()
        self.reused = 0
        self.hang = threading.Event()   # set: the next calls block until it is cleared
        self.trickle = threading.Event()   # set: answers trickle out a byte every 0.5 s (10 s)
        self.hanging = threading.Event()
        self.drop = threading.Event()   # set: a call rotates the token, then closes without answering
        self.fail = threading.Event()   # set: a call rotates the token, then answers 500
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def caller_left(self):
                try:
                    return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    return False
                except OSError:
                    return True

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                token = dict(p.split("=", 1) for p in body.split("&") if "=" in p).get("refresh_token", "")
                with upstream.lock:
                    upstream.calls.append(token)
                while upstream.hang.is_set():
                    upstream.hanging.set()
                    time.sleep(0.05)
                    if self.caller_left():
                        return   # the caller died before this upstream processed the request
                with upstream.lock:
                    if token in upstream.used:
                        upstream.reused += 1
                        answer, status = {"error": "invalid_grant: refresh token reused, session revoked"}, 400
                    else:
                        upstream.used.add(token)
                        n = len(upstream.used)
                        answer, status = {"access_token": f"a{n}", "refresh_token": f"r{n}-{token}", "expires_in": 3600}, 200
                if upstream.drop.is_set():
                    self.close_connection = True
                    return   # processed (the token is spent), the answer lost
                if upstream.fail.is_set():
                    answer, status = {"error": "server_error"}, 500   # processed, then failed
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if upstream.trickle.is_set():
                    # Processed (the token is spent): the answer's first 20 bytes take 10 s.
                    try:
                        for i in range(20):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.5)
                        self.wfile.write(data[20:])
                    except OSError:
                        pass   # the caller gave up
                    return
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def received_twice(self):
        """The refresh tokens this upstream received more than once: at most once is the rule,
        whatever each call's outcome."""
        with self.lock:
            return sorted({t for t in self.calls if self.calls.count(t) > 1})

    def calls_for(self, prefix):
        with self.lock:
            return [c for c in self.calls if c.endswith(prefix) or c == prefix]


# MARK: A link to PostgreSQL that can go silent

class SilentLink:
    """A TCP relay to the cluster whose connections can go silent: each stays open and nothing
    passes either way (a network partition that sends no reset) until the link speaks again;
    what was sent meanwhile passes then. `silence()` silences the connections open now and those
    made later; `heal_new()` lets new connections through while those silenced stay silent (a
    connection that died without a word, on a network that works again)."""

    def __init__(self, port):
        self.target = port
        self.lock = threading.Lock()
        self.made = 0              # connections relayed so far
        self.silent_below = 0      # connections numbered below this are silent...
        self.silent_new = False    # ...and those made later too, while this is set
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def silence(self):
        with self.lock:
            self.silent_below, self.silent_new = self.made, True

    def heal_new(self):
        with self.lock:
            self.silent_new = False

    def speak(self):
        with self.lock:
            self.silent_below, self.silent_new = 0, False

    def is_silent(self, number):
        with self.lock:
            return number < self.silent_below or self.silent_new

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            with self.lock:
                number = self.made
                self.made += 1
                if self.silent_new:
                    self.silent_below = self.made
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self.relay, args=(number, source, sink), daemon=True).start()

    def relay(self, number, source, sink):
        try:
            while data := source.recv(65536):
                while self.is_silent(number):
                    time.sleep(0.02)
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# MARK: The instances

class Instance:
    def __init__(self, binary, database, upstream, log_dir, number, extra=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(log_dir, f"instance-{number}.log"), "w")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--backend", "postgres", "--database", database,
             "--upstream", upstream, "--refresh-lease", str(LEASE_SECONDS), *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"instance {number} exited: see {self.log.name}")
                time.sleep(0.1)
        raise RuntimeError(f"instance {number} did not listen in 30 s")

    def request(self, method, path, token=None, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text = response.read().decode()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, text

    def kill(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


def sign_in(instance, name, password):
    status, body = instance.request("POST", "/signin", body={"name": name, "password": password})
    assert status == 200, (status, body)
    return body["token"]


def statements(cluster):
    """How many statements the instances have run (pg_stat_statements counts as they finish)."""
    return int(cluster.sql("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%habitat_%' AND query NOT LIKE '%pg_stat_statements%'"))


def read_until_cached(instance, token, cluster, seconds=5):
    """Reads GET /me at `instance` until a read runs no statement: the instance keeps a copy.

    NB: a read during which the instance hears of a change of that session (the sign-in's own,
    arriving late) rightly keeps nothing; the next read does."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        before = statements(cluster)
        if instance.request("GET", "/me", token)[0] == 200 and statements(cluster) == before:
            return True
    return False


def main():
    os.chdir(HERE)
    flags = shlex.split(os.environ.get("SWIFT_BUILD_FLAGS", ""))
    scratch = os.path.abspath(flags[flags.index("--scratch-path") + 1] if "--scratch-path" in flags else ".build")
    flags = [f for i, f in enumerate(flags) if f != "--scratch-path" and (i == 0 or flags[i - 1] != "--scratch-path")]
    binary = os.environ.get("HABITAT_SERVER")   # CI: the server it built already
    if not binary:
        print("== building habitat-server", flush=True)
        run_quiet(["swift", "build", "--scratch-path", scratch] + flags + ["--product", "habitat-server"])
        binary = os.path.join(subprocess.run(["swift", "build", "--scratch-path", scratch] + flags + ["--show-bin-path"],
                                             check=True, capture_output=True, text=True).stdout.strip(), "habitat-server")
    cluster = Cluster()
    instances = []
    try:
        cluster.start()
        cluster.sql("CREATE EXTENSION pg_stat_statements")
        print(f"== PostgreSQL ({cluster.bin}) on 127.0.0.1:{cluster.port}, in {cluster.dir}", flush=True)

        print("== the add-on's tests, the session backend's on this PostgreSQL too", flush=True)
        addon = os.path.join(HERE, "..", "..", "Integrations", "HabitatHummingbird")
        tests = subprocess.run(["swift", "test", "--scratch-path", scratch] + flags,
                               cwd=addon, env=dict(os.environ, HABITAT_POSTGRES_URL=cluster.url), capture_output=True, text=True)
        summary = [line for line in tests.stdout.splitlines() if "Test run with" in line or "passed after" in line and "postgres" in line]
        print("\n".join("  " + line for line in summary[-1:]), flush=True)
        check(tests.returncode == 0 and "postgres" in tests.stdout, "the backend contract holds on PostgreSQL (every test ran on memory and on postgres)")
        if tests.returncode != 0:
            print("\n".join(l for l in tests.stdout.splitlines() if "✘" in l or "error" in l.lower())[-6000:], tests.stderr[-2000:])

        upstream = Upstream()
        log_dir = cluster.dir
        instances = [Instance(binary, cluster.url, upstream.url, log_dir, n) for n in (1, 2, 3)]
        one, two, three = instances
        print(f"== three instances on ports {[i.port for i in instances]}; upstream {upstream.url}; lease {LEASE_SECONDS} s", flush=True)

        print("== 1. signed in on one, known to all", flush=True)
        ada = sign_in(one, "ada", "analytical")
        for instance in instances:
            status, body = instance.request("GET", "/me", ada)
            check(status == 200 and body["name"] == "Ada", f"instance on {instance.port} serves Ada ({status})")
        before = statements(cluster)
        for _ in range(20):
            two.request("GET", "/me", ada)
        queries_me = (statements(cluster) - before) / 20

        before = statements(cluster)
        for n in range(20):
            instances[n % 3].request("POST", "/me/visits", ada)
        queries_visit = (statements(cluster) - before) / 20

        print("== 2. 200 concurrent visits across three instances", flush=True)
        before = statements(cluster)
        with ThreadPoolExecutor(max_workers=64) as pool:
            answers = list(pool.map(lambda n: instances[n % 3].request("POST", "/me/visits", ada), range(200)))
        visit_queries = (statements(cluster) - before) / 200
        counts = sorted(body["visits"] - 20 for status, body in answers if status == 200)
        check(all(status == 200 for status, _ in answers), f"all 200 visits answered 200 ({sum(s == 200 for s, _ in answers)})")
        check(counts == list(range(1, 201)), "each visit counted once: the answers are 1...200, no update lost")
        stored = json.loads(bytes.fromhex(cluster.sql("SELECT encode(data, 'hex') FROM habitat_sessions WHERE id = '%s'" % stored_key(ada))).decode())
        check(stored["visits"] == 220, f"the stored session says 220 visits, the 20 before included ({stored['visits']})")
        check(cluster.sql("SELECT count(*) FROM habitat_sessions WHERE id = '%s'" % ada) == "0", "the table holds the session ID's hash, never the ID")

        print("== 3. a rename on one instance, seen by the others", flush=True)
        status, body = two.request("PATCH", "/me", ada, {"name": "Ada Lovelace"})
        check(status == 200 and body["name"] == "Ada Lovelace", f"instance two renamed ({status})")
        status, body = three.request("GET", "/me", ada)
        check(status == 200 and body["name"] == "Ada Lovelace", "instance three serves the new name")
        status, body = one.request("POST", "/me/visits", ada)
        check(status == 200 and body["visits"] == 221, "the rename kept the visits (the next is 221)")

        print("== 4. an expired upstream token met by three instances at once", flush=True)
        grace = sign_in(three, "grace", "cobol")
        with ThreadPoolExecutor(max_workers=30) as pool:
            answers = list(pool.map(lambda n: instances[n % 3].request("GET", "/me/upstream", grace), range(30)))
        tokens = {body["accessToken"] for status, body in answers if status == 200}
        check(all(status == 200 for status, _ in answers), f"30 of 30 answered 200 ({sum(s == 200 for s, _ in answers)})")
        grace_calls = [c for c in upstream.calls if c.startswith("r0-")]
        check(len(upstream.calls) == 1 and len(tokens) == 1, f"one upstream call ({len(upstream.calls)}), one access token for all ({tokens})")
        check(upstream.reused == 0, "no refresh token spent twice")

        print("== 5. the lease holder killed mid-refresh", flush=True)
        other = sign_in(two, "ada", "analytical")
        upstream.hang.set()
        calls_before = len(upstream.calls)
        def hold():
            try:
                one.request("GET", "/me/upstream", other, timeout=60)
            except OSError:
                pass   # killed while it held the lease: no answer
        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        check(upstream.hanging.wait(10), "instance one took the lease and is waiting for the upstream")
        killed_at = time.time()
        one.kill()
        upstream.hang.clear()
        status, body = two.request("GET", "/me/upstream", other, timeout=60)
        waited = time.time() - killed_at
        check(status == 401, f"instance two ends the session: the dead holder may have spent its refresh token ({status}: {body})")
        check(waited >= LEASE_SECONDS - 1.5, f"after the dead holder's lease lapsed ({waited:.1f} s after the kill; lease {LEASE_SECONDS} s)")
        check(len(upstream.calls) - calls_before == 1 and not upstream.received_twice(),
              f"one upstream call (the dead one's), the token never sent again ({len(upstream.calls) - calls_before}, {upstream.received_twice()})")
        status, body = three.request("GET", "/me/upstream", other)
        check(status == 401 and len(upstream.calls) - calls_before == 1, "instance three too: the session stays ended, no call")

        print("== 6. the database goes away mid-run", flush=True)
        results = []
        stop = threading.Event()

        def hammer(instance, token, name):
            while not stop.is_set():
                try:
                    status, body = instance.request("GET", "/me", token, timeout=10)
                except OSError as error:
                    status, body = "no answer in 10 s", str(error)
                results.append((status, body, name))

        workers = [threading.Thread(target=hammer, args=(i, t, n), daemon=True)
                   for i in (two, three) for t, n in ((ada, "Ada Lovelace"), (grace, "Grace"))]
        for worker in workers:
            worker.start()
        time.sleep(0.5)
        cluster.stop("immediate")
        down_at = len(results)
        time.sleep(4)
        stop.set()
        for worker in workers:
            worker.join(60)
        wrong = [r for r in results if r[0] == 200 and r[1]["name"] != r[2]]
        unavailable = [r for r in results[down_at:] if r[0] == 503]
        other_errors = [r for r in results if r[0] not in (200, 503)]
        message = unavailable[0][1]["error"]["message"] if unavailable else ""
        check(not wrong, f"never a wrong member ({len(results)} requests, {len(wrong)} wrong)")
        check(len(unavailable) > 0 and "sessions are unavailable" in message, f"503 with a clear message: {message!r}")
        check(not other_errors, f"no other status ({[r[0] for r in other_errors][:5]})")
        cluster.start()
        recovered = False
        deadline = time.time() + 20
        while time.time() < deadline and not recovered:
            status, body = two.request("GET", "/me", ada)
            recovered = status == 200 and body["name"] == "Ada Lovelace"
            time.sleep(0.2)
        check(recovered, "the fleet serves again once the database is back")

        print("== 7. an upstream that trickles its answer past the refresh lease", flush=True)
        four = Instance(binary, cluster.url, upstream.url, log_dir, 4)   # in place of the killed one
        instances.append(four)
        lin = sign_in(two, "grace", "cobol")   # a session whose refresh token is unspent
        calls_before, reused_before = len(upstream.calls), upstream.reused
        upstream.trickle.set()
        started = time.time()
        with ThreadPoolExecutor(max_workers=9) as pool:
            answers = list(pool.map(lambda n: (four, two, three)[n % 3].request("GET", "/me/upstream", lin, timeout=60), range(9)))
        answered_in = time.time() - started
        time.sleep(LEASE_SECONDS + 1)   # past any lease: a lapsed holder would let another spend it now
        status_after, _ = three.request("GET", "/me/upstream", lin)
        upstream.trickle.clear()
        check(all(status == 401 for status, _ in answers), f"every caller is told to sign in again ({[s for s, _ in answers]})")
        check(answered_in < LEASE_SECONDS * 2, f"within the deadline, not the trickle's 10 s ({answered_in:.1f} s)")
        check(status_after == 401, f"the session stays ended after the lease would have lapsed ({status_after})")
        check(len(upstream.calls) - calls_before == 1 and upstream.reused == reused_before,
              f"one upstream call, no refresh token spent twice ({len(upstream.calls) - calls_before} calls, {upstream.reused - reused_before} reused)")

        def unclear_answer(name, mode):
            member = sign_in(two, "grace", "cobol")   # a session whose refresh token is unspent
            calls_before = len(upstream.calls)
            mode.set()
            try:
                with ThreadPoolExecutor(max_workers=6) as pool:
                    answers = list(pool.map(lambda n: (four, two, three)[n % 3].request("GET", "/me/upstream", member, timeout=60), range(6)))
            finally:
                mode.clear()
            status_after, _ = three.request("GET", "/me/upstream", member)
            check(all(status == 401 for status, _ in answers), f"{name}: every caller is told to sign in again ({[s for s, _ in answers]})")
            check(status_after == 401, f"{name}: the session stays ended ({status_after})")
            check(len(upstream.calls) - calls_before == 1 and not upstream.received_twice(),
                  f"{name}: one upstream call, no refresh token received twice ({len(upstream.calls) - calls_before}, {upstream.received_twice()})")

        print("== 7a. an upstream that rotates the token and drops its answer", flush=True)
        unclear_answer("dropped answer", upstream.drop)
        print("== 7b. an upstream that rotates the token and answers 500", flush=True)
        unclear_answer("500 after rotating", upstream.fail)

        print("== 7c. PostgreSQL stopped while the upstream answers", flush=True)
        member = sign_in(two, "grace", "cobol")
        calls_before = len(upstream.calls)
        upstream.hang.set()
        upstream.hanging.clear()
        answer = {}
        def refresh_during_outage():
            answer["status"] = two.request("GET", "/me/upstream", member, timeout=60)[0]
        caller = threading.Thread(target=refresh_during_outage, daemon=True)
        caller.start()
        check(upstream.hanging.wait(10), "instance two is waiting for the upstream under the lease")
        cluster.stop("immediate")
        upstream.hang.clear()   # the upstream rotates and answers; the new tokens can't be written
        caller.join(60)
        cluster.start()
        time.sleep(LEASE_SECONDS + 1)   # past the lease the failed write left in place
        recovered_status = None
        deadline = time.time() + 20
        while time.time() < deadline:
            recovered_status, _ = three.request("GET", "/me/upstream", member, timeout=30)
            if recovered_status != 503:
                break
            time.sleep(0.2)
        check(answer.get("status") in (401, 503), f"the caller during the outage is refused ({answer.get('status')})")
        check(recovered_status == 401, f"after the restart the session is ended, not refreshed again ({recovered_status})")
        check(len(upstream.calls) - calls_before == 1 and not upstream.received_twice(),
              f"one upstream call, no refresh token received twice ({len(upstream.calls) - calls_before}, {upstream.received_twice()})")

        print("== 8. three instances that cache sessions: a sign-out at one, refused at the others", flush=True)
        cached = [Instance(binary, cluster.url, upstream.url, log_dir, n, ["--session-cache"]) for n in (5, 6, 7)]
        instances.extend(cached)
        c1, c2, c3 = cached
        time.sleep(1)   # each instance's feed listening
        # 18 sessions: three per member per instance, nine per member, within the fleet's cap of
        # ten sessions per member (counted in the database, across instances).
        logins = [(instance, name, password) for instance in cached for name, password in (("ada", "analytical"), ("grace", "cobol"))
                  for _ in range(3)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            tokens = list(pool.map(lambda login: sign_in(*login), logins))
        warm = [c2.request("GET", "/me", token)[0] for token in tokens] + [c3.request("GET", "/me", token)[0] for token in tokens]
        check(all(status == 200 for status in warm), "every session served by the other two instances")
        check(all(read_until_cached(other, token, cluster) for token in tokens[:10] for other in (c2, c3)),
              "the sessions read at instances six and seven are kept there")
        before = statements(cluster)
        for token in tokens[:10]:
            c2.request("GET", "/me", token)
            c3.request("GET", "/me", token)
        cached_queries = (statements(cluster) - before) / 20
        check(cached_queries == 0, f"a cached GET /me runs no statement ({cached_queries:.2f})")
        latencies, refused = [], 0
        for token in tokens:
            status, _ = c1.request("POST", "/signout", token)
            signed_out = time.perf_counter()
            slowest = 0.0
            for other in (c2, c3):
                while True:
                    status, _ = other.request("GET", "/me", token)
                    if status == 401:
                        refused += 1
                        break
                    if time.perf_counter() - signed_out > 5:
                        break
                slowest = max(slowest, time.perf_counter() - signed_out)
            latencies.append(slowest * 1000)
        latencies.sort()
        p50, p99 = latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        check(refused == 2 * len(tokens), f"every signed-out session refused at both other instances ({refused} of {2 * len(tokens)})")
        # NB: the target is judged on a plain build; under the thread sanitizer (CI) every request
        # is several times slower, so there the check is only that it propagates.
        limit = 500 if "sanitize" in os.environ.get("SWIFT_BUILD_FLAGS", "") else 50
        check(p99 <= limit, f"within {limit} ms p99 ({p99:.1f} ms)")

        print("== 9. PostgreSQL restarted under the caches: no sign-out lost", flush=True)
        fresh = [sign_in(c2, "ada", "analytical") for _ in range(3)]
        check(all(read_until_cached(c3, token, cluster) for token in fresh), "cached at instance seven before the restart")
        cluster.stop("immediate")
        time.sleep(1)
        cluster.start()
        deadline = time.time() + 20
        while time.time() < deadline and c1.request("POST", "/signout", fresh[0])[0] != 204:
            time.sleep(0.2)
        refused_after, seen = False, []
        deadline = time.time() + 5
        while time.time() < deadline and not refused_after:
            seen.append(c3.request("GET", "/me", fresh[0])[0])
            refused_after = seen[-1] == 401
        check(refused_after, "a sign-out made after the restart is refused by an instance that had the session cached"
              + ("" if refused_after else f" (answers within 5 s: {sorted(set(seen))})"))
        check(c3.request("GET", "/me", fresh[1])[0] == 200, "the session still signed in is served again")
        # The copies the outage put aside are read again together once the feed is back: a
        # session cached before the restart, and not read since, is served without a statement.
        # The feed is back when a session signed in now is kept after its first read.
        probe, feed_back = sign_in(c1, "grace", "cobol"), False
        deadline = time.time() + 20
        while time.time() < deadline and not feed_back:
            c3.request("GET", "/me", probe)
            before = statements(cluster)
            c3.request("GET", "/me", probe)
            feed_back = statements(cluster) == before
            time.sleep(0.2)
        check(feed_back, "instance seven's feed is back after the restart")
        time.sleep(2)   # its catch-up: one read of every copy put aside
        before = statements(cluster)
        status, _ = c3.request("GET", "/me", fresh[2])
        caught_up = statements(cluster) - before
        check(status == 200 and caught_up == 0,
              f"a session cached before the restart is a copy again, read back by the catch-up ({caught_up} statements)")

        print("== 10. sign-in limits across the fleet: tries per name, sessions per member", flush=True)
        # A name nobody has: 30 wrong passwords at once, spread over three instances. The
        # attempts are counted in the database before each hash, so 5 are tried, 25 refused.
        spread = [c1, c2, c3]
        def wrong_try(n):
            return spread[n % 3].request("POST", "/signin", body={"name": "mallory", "password": f"guess-{n}"})[0]
        with ThreadPoolExecutor(max_workers=8) as pool:
            tries = list(pool.map(wrong_try, range(30)))
        check(tries.count(401) == 5 and tries.count(429) == 25,
              f"5 tries a minute for a name across three instances, not 5 each ({tries.count(401)} tried, {tries.count(429)} refused, others {[t for t in tries if t not in (401, 429)]})")
        grace = [sign_in(spread[n % 3], "grace", "cobol") for n in range(12)]
        served = [c1.request("GET", "/me", token)[0] for token in grace]
        check(served[:2] == [401, 401] and served[2:] == [200] * 10,
              f"a member's sessions are capped at ten across the fleet: the two oldest ended ({served})")

        print("== 11. a silent link to PostgreSQL (a partition: the connections open, nothing passes)", flush=True)
        # Instance eight reaches the database through a link that can go silent: no reset, no
        # error, nothing through. Its feed can't hear the sign-out made at instance five, and
        # nothing tells it so: only its heartbeats, which stop coming back, can.
        link = SilentLink(cluster.port)
        eight = Instance(binary, cluster.url.replace(f":{cluster.port}/", f":{link.port}/"), upstream.url, log_dir, 8, ["--session-cache"])
        instances.append(eight)
        time.sleep(1)   # its feed listening
        quiet = sign_in(c1, "ada", "analytical")
        check(read_until_cached(eight, quiet, cluster), "cached at instance eight before the link goes silent")
        link.silence()
        silent_at = time.time()
        signed_out = c1.request("POST", "/signout", quiet)[0]
        last_served, since = None, []   # when it was last served, and the answers since
        while time.time() - silent_at < 6:
            status = eight.request("GET", "/me", quiet)[0]
            since.append(status)
            if status == 200:
                last_served, since = time.time() - silent_at, []
        # NB: the bound is the feed's: a copy is trusted two heartbeats (2 s) after the last
        # heartbeat heard back was sent, which was before the link went silent.
        check(signed_out == 204 and last_served is not None and last_served < 3.0 and since,
              f"the signed-out session is no longer served within two heartbeats of the silence (last served at "
              f"{last_served if last_served is None else round(last_served, 2)} s; then {sorted(set(since))})")
        log = open(os.path.join(log_dir, "instance-8.log"), errors="replace").read()
        check("the session cache is off until its change feed is back: no heartbeat came back" in log,
              "instance eight logged that its cache was off, and why")
        # The network works again for new connections; the silenced ones stay silent (they died
        # without a word). The feed listens on a new connection without waiting for the old.
        link.heal_new()
        healed_at = time.time()
        refused = False
        while time.time() - healed_at < 20 and not refused:
            refused = eight.request("GET", "/me", quiet)[0] == 401
            time.sleep(0.1)
        check(refused, "refused (401) on new connections while the silenced ones stay silent")
        check(read_until_cached(eight, sign_in(c1, "ada", "analytical"), cluster, seconds=20),
              f"instance eight caches again on a new connection, the silenced ones still silent ({time.time() - healed_at:.1f} s)")
        link.speak()

        print("== figures", flush=True)
        print(f"  statements per request: GET /me {queries_me:.2f}; POST /me/visits one at a time {queries_visit:.2f}, "
              f"200 at once on one session {visit_queries:.2f} (rereads and retries)")
        print(f"  upstream calls: {len(upstream.calls)}; refresh tokens reused: {upstream.reused}")
        print(f"  session cache: GET /me {cached_queries:.2f} statements per request; a sign-out refused at the two other "
              f"instances within p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms ({len(latencies)} sign-outs, "
              f"time to the second instance's 401, each request's own time included)")
        print(f"  silent link: the signed-out session last served {last_served if last_served is None else round(last_served, 2)} s "
              f"after the link went silent (the bound: two heartbeats, 2 s)")
        print(f"  database down: {len(unavailable)} answers 503, {len(wrong)} wrong members, of {len(results)} requests")
        ours, theirs = race_reports(log_dir)
        for path, report in ours + theirs:
            print(f"-- a data race reported in {path}:\n{report}")
        check(not ours, f"no instance reported a data race in this package's code (under the thread sanitizer): {[path for path, _ in ours]}")
        if theirs:
            # NB: reported, not judged: a race whose location is inside a dependency's checkout
            # (seen once: swift-nio's NIOThrowingAsyncSequenceProducer during a PostgreSQL outage).
            print(f"  note: {len(theirs)} data race report(s) located inside a dependency, printed above")
    finally:
        for instance in instances:
            instance.kill()
        if failures:
            for path in glob.glob(os.path.join(cluster.dir, "instance-*.log")):
                print(f"-- {path}:\n" + open(path).read()[-3000:])
        cluster.remove()
    if failures:
        print(f"fleet.py: {len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("fleet.py: all checks passed")


def race_reports(log_dir):
    """Every thread sanitizer report in the instances' logs, whole, split by where it is located
    (its SUMMARY line): in this package's code, or inside a dependency's checkout."""
    ours, theirs = [], []
    for path in sorted(glob.glob(os.path.join(log_dir, "instance-*.log"))):
        text = open(path, errors="replace").read()
        for report in re.findall(r"WARNING: ThreadSanitizer.*?SUMMARY: ThreadSanitizer[^\n]*", text, re.S):
            summary = report.rsplit("SUMMARY:", 1)[1]
            (theirs if "/checkouts/" in summary else ours).append((path, report))
        if "WARNING: ThreadSanitizer" in text and "SUMMARY: ThreadSanitizer" not in text:
            ours.append((path, text[text.index("WARNING: ThreadSanitizer"):]))
    return ours, theirs


if __name__ == "__main__":
    main()
