//! `swarmtop serve` under steady traffic for about a minute and a half (SWARMTOP_SOAK_SECS, longer
//! by hand): a session written to all along, new sessions now and then, clients of the event
//! stream and of the machine feed coming and going, questions asked. Its memory, descriptors and
//! threads stay flat once warm, and a client that reads all along gets every event once, in order.

mod serve_support;
#[path = "store_support/mod.rs"]
mod store_support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serve_support::{Daemon, line, opening, transcript};
use store_support::Machine;

/// Lines a second into the busy session.
const RATE: u64 = 200;
/// Lines of each short session that starts along the way.
const SHORT: u64 = 20;

/// What `/proc` says of the daemon at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    fds: usize,
    threads: u64,
}

fn sample(pid: u32, at: Duration) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)?.split_whitespace().next()?.parse().ok()).unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    Sample { at, rss_kib: field("VmRSS:"), fds, threads: field("Threads:") }
}

/// A machine feed (`/api/feed`) read until its history is over, then dropped.
///
/// Only the bytes just read are searched, with the few before them a marker may straddle: the
/// history holds the busy session's every line (hundreds of MB within an hour by hand), and
/// searching all of it at each read made this client, not the daemon, what a long soak measured.
fn feed_until_live(addr: &str) {
    const LIVE: &[u8] = b"event: live\n";
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET /api/feed?all=1 HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 64 << 10];
    let mut kept = 0;
    loop {
        let n = s.read(&mut buf[kept..]).unwrap();
        assert!(n > 0, "the feed ended before its history did");
        let end = kept + n;
        if memchr::memmem::find(&buf[..end], LIVE).is_some() {
            return;
        }
        kept = (LIVE.len() - 1).min(end);
        buf.copy_within(end - kept..end, 0);
    }
}

/// Writes the busy session at [`RATE`] and a short session every ten seconds, until `stop`;
/// returns the records written.
fn write_traffic(home: &std::path::Path, stop: &AtomicBool, written: &AtomicU64) {
    let now = jiff::Timestamp::now().to_string();
    std::fs::write(transcript(home, 0), opening(0, &now)).unwrap();
    written.fetch_add(1, Ordering::Relaxed);
    let mut busy = std::fs::OpenOptions::new().append(true).open(transcript(home, 0)).unwrap();
    let began = Instant::now();
    let (mut i, mut sessions) = (0u64, 0usize);
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        busy.write_all(line(0, i, &now).as_bytes()).unwrap();
        written.fetch_add(1, Ordering::Relaxed);
        if i % (RATE * 10) == 0 {
            sessions += 1;
            let mut text = opening(sessions, &now);
            (1..=SHORT).for_each(|k| text.push_str(&line(sessions, k, &now)));
            std::fs::write(transcript(home, sessions), text).unwrap();
            written.fetch_add(SHORT + 1, Ordering::Relaxed);
        }
        if let Some(wait) =
            (began + Duration::from_secs_f64(i as f64 / RATE as f64)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
}

#[test]
fn under_steady_traffic_memory_and_descriptors_stay_flat_and_every_event_is_told_once() {
    let secs: u64 = std::env::var("SWARMTOP_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(90);
    let m = Machine::new();
    let home = m.home();
    std::fs::create_dir_all(transcript(&home, 0).parent().unwrap()).unwrap();
    // The events kept for clients (up to 32,768 by default) fill at their own pace, some 400 a
    // second here: 4,096 are full well before the first third is over, so that what is measured
    // after it is what the daemon does not keep.
    let d = Daemon::start_with(&home, "127.0.0.1:0", "5s", &["--keep-events", "4096"]);
    let pid = d.child.id();
    let start = d.wait_status("caught up", |s| s["lastEventId"].as_u64() >= Some(1))["lastEventId"].as_u64().unwrap();
    let mut all_along = d.events(None);
    let target = Arc::new(AtomicU64::new(u64::MAX));
    let until = target.clone();
    // Only what is checked is kept (ids and whether a resync came): an hour by hand is over a
    // million events.
    let reader = std::thread::spawn(move || {
        let (mut ids, mut resynced) = (Vec::new(), false);
        loop {
            let e = all_along.next_raw();
            resynced |= e.kind == "resync";
            ids.extend(e.id);
            if e.id >= Some(until.load(Ordering::Relaxed)) {
                return (ids, resynced);
            }
        }
    });

    let (stop, written) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let writer = {
        let (home, stop, written) = (home.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || write_traffic(&home, &stop, &written))
    };
    let began = Instant::now();
    let mut samples = Vec::new();
    let mut round = 0u64;
    while began.elapsed() < Duration::from_secs(secs) {
        round += 1;
        // Clients that come and go: a stream read a little, questions, now and then a feed.
        let mut passing = d.events(None);
        passing.next();
        drop(passing);
        d.json("/api/sessions");
        if round % 5 == 0 {
            feed_until_live(&d.addr);
        }
        // Each round: the floor is the lowest of a third's samples, and memory swings with each
        // sync and feed; one sample in three missed most troughs.
        samples.push(sample(pid, began.elapsed()));
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let records = written.load(Ordering::Relaxed);
    let status = d.wait_status("every line read", |s| s["records"].as_u64() == Some(records));
    let last = status["lastEventId"].as_u64().unwrap();
    // The short sessions stop (no process runs them: two quiet looks of the census, up to 20 s);
    // each is then compacted, its model held no longer whole (18 KB each, 360 an hour).
    let short = std::fs::read_dir(transcript(&home, 0).parent().unwrap()).unwrap().count() as u64 - 1;
    let compacted =
        d.wait_status("the short sessions stopped", |s| s["compacted"].as_u64() >= Some(short))["compacted"]
            .as_u64()
            .unwrap();
    eprintln!("{short} short sessions, {compacted} sessions compacted");
    target.store(last, Ordering::Relaxed);
    // One more session: events past the target, so that the reader stops wherever it is.
    let now = jiff::Timestamp::now().to_string();
    std::fs::write(transcript(&home, 9999), opening(9999, &now) + &line(9999, 1, &now)).unwrap();
    let (read, resynced) = reader.join().unwrap();

    let ids: Vec<u64> = read.into_iter().filter(|&id| id <= last).collect();
    assert!(!resynced, "the client that read all along never fell behind");
    assert_eq!(ids, (start + 1..=last).collect::<Vec<_>>(), "every event once, in order");
    flat(&samples, pid);
}

/// The daemon's resident memory once what it just did is over: the lowest of 5 s of samples, in
/// KiB (a sync or a census may be under way at any one of them).
fn settled_rss_kib(pid: u32) -> u64 {
    let until = Instant::now() + Duration::from_secs(5);
    let mut low = u64::MAX;
    while Instant::now() < until {
        low = low.min(sample(pid, Duration::ZERO).rss_kib);
        std::thread::sleep(Duration::from_millis(100));
    }
    low
}

/// Feeds of a long history: each reads it in chunks of a MiB on a thread of its own, which ends
/// with its client. What they read goes back to the kernel: with mimalloc's purge delay, a span
/// freed stayed committed until the thread that took it allocated again, and the daemon kept
/// what its threads had read (a 100 MB session: 79 MiB once read at start, 192 after 6 feeds;
/// 17 and 21 with the delay at 0).
#[test]
fn feeds_give_back_what_they_read() {
    const HISTORY: u64 = 96 << 20;
    let m = Machine::new();
    let home = m.home();
    let path = transcript(&home, 0);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let now = jiff::Timestamp::now().to_string();
    let mut text = opening(0, &now);
    let mut lines = 1u64;
    while (text.len() as u64) < HISTORY {
        text.push_str(&line(0, lines, &now));
        lines += 1;
    }
    std::fs::write(&path, text).unwrap();
    let d = Daemon::start_with(&home, "127.0.0.1:0", "5s", &[]);
    let pid = d.child.id();
    // Two syncs: the first (at start) may have begun before ingest had read the whole history.
    d.wait_status("the history read and stored", |s| {
        s["records"].as_u64() == Some(lines) && s["syncs"].as_u64() >= Some(2)
    });
    let read = settled_rss_kib(pid);
    for _ in 0..4 {
        feed_until_live(&d.addr);
    }
    let fed = settled_rss_kib(pid);
    eprintln!("{} MiB of history: {} MiB once read, {} MiB after 4 feeds", HISTORY >> 20, read >> 10, fed >> 10);
    assert!(fed <= read + 12 * 1024, "feeds kept what they read: {} MiB, then {} MiB", read >> 10, fed >> 10);
}

/// Memory rises and falls with each sync (it reads only the busy session's new lines,
/// `store::carry`, and writes what changed) and each feed (a machine source of its own, which
/// reads the busy session's history from its start once, then follows it, a few chunks ahead of
/// its client): flat means the last third's floor is the middle third's (the first is warming
/// up), within a few MiB. The peaks are not held to it: a sync's model of the busy session (18,000
/// lines by the end) is passing work, not what the daemon keeps. Descriptors and threads come back to
/// what they were once the passing clients are gone (a closed stream is noticed at its next write,
/// a keepalive at most 15 s on).
fn flat(samples: &[Sample], pid: u32) {
    let third = samples.len() / 3;
    let (middle, last) = (&samples[third..2 * third], &samples[2 * third..]);
    let floor = |s: &[Sample]| s.iter().map(|s| s.rss_kib).min().unwrap();
    let warm = middle[0];
    let settle = Instant::now() + Duration::from_secs(20);
    let mut end = sample(pid, Duration::ZERO);
    while (end.fds > warm.fds || end.threads > warm.threads) && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(500));
        end = sample(pid, Duration::ZERO);
    }
    eprintln!("soak samples: {samples:?}; at the end {end:?}");
    let slack = 16 * 1024;
    assert!(floor(last) <= floor(middle) + slack, "memory's floor rose: {samples:?}");
    assert!(end.fds <= warm.fds, "descriptors: {} at {:?}, {} at the end", warm.fds, warm.at, end.fds);
    assert!(end.threads <= warm.threads, "threads: {} at {:?}, {} at the end", warm.threads, warm.at, end.threads);
}
