#!/usr/bin/env python3
"""A throwaway PostgreSQL cluster: in a temporary directory, on a free loopback port, trust
authentication, loopback only. Used by fleet.py and load.sh; installs PostgreSQL from the
distribution's packages when no `initdb` is found.

    python3 throwaway_postgres.py start      # prints "URL DIRECTORY"; the cluster runs on
    python3 throwaway_postgres.py stop DIR   # stops it and removes DIR
"""
import os, pwd, shutil, socket, subprocess, sys, tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_quiet(command, **kwargs):
    return subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)


def postgres_bin():
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    root = "/usr/lib/postgresql"
    if not os.path.isdir(root) or not os.listdir(root):
        print("== installing PostgreSQL from the distribution's packages", flush=True)
        sudo = [] if os.getuid() == 0 else ["sudo"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run_quiet(sudo + ["apt-get", "update", "-q"], env=env)
        run_quiet(sudo + ["apt-get", "install", "-y", "-q", "postgresql"], env=env)
        # The package starts a cluster of its own on 5432; this test uses its own, elsewhere.
    version = sorted(os.listdir(root), key=lambda v: int(v.split(".")[0]))[-1]
    return os.path.join(root, version, "bin")


class Cluster:
    """A cluster in a temporary directory, on a free loopback port, owned by a non-root user
    (PostgreSQL refuses to run as root)."""

    def __init__(self, directory=None):
        self.bin = postgres_bin()
        if directory:   # one started before, by `start`
            self.dir, self.data = directory, os.path.join(directory, "data")
            self.port = int(open(os.path.join(self.data, "postmaster.pid")).read().splitlines()[3])
            self.as_user = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
            self.url = f"postgres://habitat@127.0.0.1:{self.port}/postgres"
            return
        self.dir = tempfile.mkdtemp(prefix="habitat-postgres-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.as_user = []
        if os.getuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        run_quiet(self.as_user + [f"{self.bin}/initdb", "-D", self.data, "-U", "habitat", "--auth=trust", "-E", "UTF8"])
        self.url = f"postgres://habitat@127.0.0.1:{self.port}/postgres"

    def start(self):
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off -c max_connections=200 -c shared_preload_libraries=pg_stat_statements"
        run_quiet(self.as_user + [f"{self.bin}/pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-o", options, "-w", "start"])

    def stop(self, mode="fast"):
        subprocess.run(self.as_user + [f"{self.bin}/pg_ctl", "-D", self.data, "-m", mode, "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sql(self, query):
        out = subprocess.run([f"{self.bin}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "habitat", "-d", "postgres",
                              "-tAc", query], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def remove(self):
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)




if __name__ == "__main__":
    if sys.argv[1:2] == ["start"]:
        cluster = Cluster()
        cluster.start()
        cluster.sql("CREATE EXTENSION pg_stat_statements")
        print(cluster.url, cluster.dir)
    elif sys.argv[1:2] == ["stop"] and len(sys.argv) == 3:
        Cluster(sys.argv[2]).remove()
    else:
        sys.exit(__doc__)
