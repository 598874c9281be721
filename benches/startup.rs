//! Start-up of the machine view and `ps` on a heavy user's HOME (issue 9): 10,000 session files
//! holding 5 GB, of which 20 sessions are recent. The recent ones must be on the first screen in
//! at most a second, and neither time nor memory may grow with the size of the history.
//!
//! What is built (in a temp dir): the old history is 5,000 Claude Code transcripts (50 projects)
//! and 5,000 Codex rollouts (100 day folders), each a *sparse* file of 512 KiB: one real first
//! line, then a hole (so 5 GB of apparent size costs no disk, and reading any of them would cost
//! the full read). Their mtimes are 3 to 10 days old. The 20 recent sessions are real: 10 copies
//! of the Codex `collab_v1` rollouts (root and 3 children, new ids) and 10 Claude Code sessions
//! with a sub-agent, written now. The same 20 are measured over a history of 1,000 files and of
//! 10,000: the ratios say whether start-up grows with the history.
//!
//! Run: `cargo bench --bench startup`. Figures: wall time of `ps`'s collection and of the machine
//! view's first complete snapshot, bytes read (`/proc/self/io` rchar), peak RSS growth.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use swarmtop::commands::sessions;
use swarmtop::pipeline::Config;
use swarmtop::source::agents::{Env, Window};
use swarmtop::source::census::{Options, machine};
use swarmtop::source::live::Event;
use swarmtop::source::proc::Proc;

const OLD_FILE_BYTES: u64 = 512 << 10;
const RECENT_CODEX: usize = 10;
const RECENT_CLAUDE: usize = 10;

fn uuid(n: u64, salt: u64) -> String {
    let x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    format!(
        "{:08x}-{:04x}-7{:03x}-8{:03x}-{:012x}",
        (x >> 32) as u32,
        (x >> 16) as u16,
        x as u16 & 0xfff,
        (x >> 4) as u16 & 0xfff,
        x & 0xffff_ffff_ffff
    )
}

fn sparse(path: &Path, first_line: &str, modified: SystemTime) {
    let f = fs::File::create(path).unwrap();
    use std::io::Write;
    (&f).write_all(first_line.as_bytes()).unwrap();
    (&f).write_all(b"\n").unwrap();
    f.set_len(OLD_FILE_BYTES).unwrap();
    f.set_modified(modified).unwrap();
}

/// `old` sparse history files, half Claude, half Codex.
fn build_history(home: &Path, old: usize) {
    let now = SystemTime::now();
    for i in 0..old / 2 {
        let age = Duration::from_secs(3 * 86_400 + i as u64 * 97);
        let project = home.join(format!(".claude/projects/-home-dev-p{}", i % 50));
        fs::create_dir_all(&project).unwrap();
        let sid = uuid(i as u64, 1);
        let line = format!(
            r#"{{"type":"user","uuid":"u","sessionId":"{sid}","cwd":"/home/dev/p","timestamp":"2026-11-20T10:00:00.000Z","message":{{"role":"user","content":"old"}}}}"#
        );
        sparse(&project.join(format!("{sid}.jsonl")), &line, now - age);
        let day = home.join(format!(".codex/sessions/2026/{:02}/{:02}", 1 + i % 100 / 28, 1 + i % 28));
        fs::create_dir_all(&day).unwrap();
        let tid = uuid(i as u64, 2);
        let line = format!(
            r#"{{"timestamp":"2026-11-20T10:00:00.000Z","type":"session_meta","payload":{{"id":"{tid}","session_id":"{tid}","cwd":"/home/dev/p"}}}}"#
        );
        sparse(&day.join(format!("rollout-2026-11-20T10-00-00-{tid}.jsonl")), &line, now - age);
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The 20 recent sessions, written now.
fn build_recent(home: &Path) {
    let rollouts = fixtures().join("codex-0.171.0/rollouts/collab_v1");
    let mut originals: Vec<PathBuf> = fs::read_dir(&rollouts).unwrap().map(|e| e.unwrap().path()).collect();
    originals.sort();
    let ids: Vec<String> = originals
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name[name.len() - 42..name.len() - 6].to_owned()
        })
        .collect();
    let day = home.join(".codex/sessions/2026/12/01");
    fs::create_dir_all(&day).unwrap();
    for copy in 0..RECENT_CODEX {
        let fresh: Vec<String> = (0..ids.len()).map(|k| uuid((copy * 10 + k) as u64, 3)).collect();
        for (path, _) in originals.iter().zip(&ids) {
            let mut text = fs::read_to_string(path).unwrap();
            let mut name = path.file_name().unwrap().to_str().unwrap().replace("2026-11-29", "2026-12-01");
            for (old, new) in ids.iter().zip(&fresh) {
                text = text.replace(old.as_str(), new);
                name = name.replace(old.as_str(), new);
            }
            fs::write(day.join(name), text).unwrap();
        }
    }
    for copy in 0..RECENT_CLAUDE {
        let sid = uuid(copy as u64, 4);
        let aid = format!("{:017x}", copy + 1);
        let project = home.join(format!(".claude/projects/-home-dev-recent{copy}"));
        let subagents = project.join(&sid).join("subagents");
        fs::create_dir_all(&subagents).unwrap();
        let session = format!(
            "{}\n{}\n{}\n",
            format_args!(
                r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{sid}","cwd":"/home/dev/recent","timestamp":"2026-12-01T10:00:00.000Z","message":{{"role":"user","content":"Survey"}}}}"#
            ),
            format_args!(
                r#"{{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"{sid}","timestamp":"2026-12-01T10:00:01.000Z","requestId":"r1","message":{{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"t1","name":"Agent","input":{{"description":"Survey","prompt":"go"}}}}],"usage":{{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":5}}}}}}"#
            ),
            format_args!(
                r#"{{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"{sid}","timestamp":"2026-12-01T10:00:09.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"done"}}]}},"toolUseResult":{{"status":"completed","agentId":"{aid}"}}}}"#
            ),
        );
        fs::write(project.join(format!("{sid}.jsonl")), session).unwrap();
        let agent = format!(
            r#"{{"type":"assistant","uuid":"s1","sessionId":"{sid}","agentId":"{aid}","isSidechain":true,"timestamp":"2026-12-01T10:00:05.000Z","requestId":"r2","message":{{"id":"m2","role":"assistant","model":"claude-haiku-4-5","content":[{{"type":"text","text":"found it"}}],"usage":{{"input_tokens":30,"output_tokens":4}}}}}}"#
        ) + "\n";
        fs::write(subagents.join(format!("agent-{aid}.jsonl")), agent).unwrap();
    }
}

fn proc_status(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn bytes_read() -> u64 {
    let io = fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("rchar:")?.trim().parse().ok()).unwrap_or(0)
}

fn options(home: &Path) -> Options {
    let env = Env::default().with("HOME", home.as_os_str());
    let since = SystemTime::now().checked_sub(Duration::from_secs(30 * 60));
    Options { window: Window { since }, env, proc: Proc::default(), tee_dir: home.join("run/swarmtop") }
}

struct Figures {
    ps: Duration,
    sessions: usize,
    machine: Duration,
    machine_sessions: usize,
    read: u64,
    peak_growth: u64,
}

fn measure(home: &Path) -> Figures {
    let config = Config::default();
    let hwm = proc_status("VmHWM:");
    let read_before = bytes_read();
    let start = Instant::now();
    let report = sessions::collect(&options(home), &config, None);
    let ps = start.elapsed();
    let read = bytes_read() - read_before;

    // The machine view's source: the first snapshot follows the first complete read.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (machine, machine_sessions) = runtime.block_on(async {
        let start = Instant::now();
        let mut rx = machine::spawn(options(home));
        loop {
            match rx.recv().await {
                Some(Event::Sessions(s)) => return (start.elapsed(), s.sessions.len()),
                Some(_) => {}
                None => return (start.elapsed(), 0),
            }
        }
    });
    Figures {
        ps,
        sessions: report.rows.len(),
        machine,
        machine_sessions,
        read,
        peak_growth: proc_status("VmHWM:").saturating_sub(hwm),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut results = Vec::new();
    for old in [1_000usize, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let built = Instant::now();
        build_history(dir.path(), old);
        build_recent(dir.path());
        let built = built.elapsed();
        // Warm the page cache for the recent files once, as a real HOME's would be.
        let _ = measure(dir.path());
        let f = measure(dir.path());
        println!(
            "history {old:>6} files ({:.1} GB apparent, built in {:.1}s): ps {:>6.1} ms for {} sessions · \
             machine view first snapshot {:>6.1} ms for {} sessions · read {:.2} MB · peak RSS +{:.1} MB",
            (old as u64 * OLD_FILE_BYTES) as f64 / 1e9,
            built.as_secs_f64(),
            f.ps.as_secs_f64() * 1e3,
            f.sessions,
            f.machine.as_secs_f64() * 1e3,
            f.machine_sessions,
            f.read as f64 / 1e6,
            f.peak_growth as f64 / 1e6,
        );
        results.push(f);
    }
    let (small, large) = (&results[0], &results[1]);
    println!(
        "10,000 vs 1,000 files: ps {:.2}× · machine view {:.2}× · bytes read {:.2}× · first screen {:.0} ms (target ≤ 1000 ms)",
        large.ps.as_secs_f64() / small.ps.as_secs_f64(),
        large.machine.as_secs_f64() / small.machine.as_secs_f64(),
        large.read as f64 / small.read.max(1) as f64,
        large.machine.as_secs_f64() * 1e3,
    );
}
