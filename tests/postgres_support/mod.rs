//! A real PostgreSQL server for the team-store tests: made by `initdb` in a temporary folder and
//! started by `pg_ctl` on a free loopback port, as `nobody` when the tests run as root (PostgreSQL
//! refuses root), stopped when dropped. The programs are the ones `scripts/setup-postgres.sh`
//! installs (`SWARMTOP_POSTGRES_BIN`, else that script's folder).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

fn bin() -> PathBuf {
    std::env::var_os("SWARMTOP_POSTGRES_BIN").map_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"), PathBuf::from)
}

fn root() -> bool {
    nix::unistd::getuid().is_root()
}

impl Postgres {
    pub fn start() -> Self {
        let bin = bin();
        assert!(bin.join("initdb").exists(), "no PostgreSQL at {}: run scripts/setup-postgres.sh", bin.display());
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let pg = Self { dir, bin, port };
        let home = pg.home();
        std::fs::create_dir(&home).unwrap();
        if root() {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(pg.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("a user nobody");
            nix::unistd::chown(&home, Some(nobody.uid), Some(nobody.gid)).unwrap();
        }
        let data = home.join("data");
        pg.run("initdb", &["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
        pg.start_again();
        pg
    }

    /// Starts the server stopped by [`Self::stop`], on the same port with the same data.
    pub fn start_again(&self) {
        let home = self.home();
        let data = home.join("data");
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, home.display());
        let log = home.join("log");
        self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"]);
    }

    /// Stops the server at once (its clients' connections cut, as a crash or a network loss would).
    pub fn stop(&self) {
        let data = self.home().join("data");
        self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("pg")
    }

    /// A program of the server's, as the user the server runs as.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = if root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd.args(args).current_dir(self.home()).output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// A database of its own for a test (`postgres://…`).
    pub fn database(&self, name: &str) -> String {
        let admin = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        client.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.home().join("data");
        let exe = self.bin.join("pg_ctl");
        let mut cmd = if root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let _ = cmd.args(["-D", data.to_str().unwrap_or_default(), "-m", "immediate", "stop"]).output();
    }
}
