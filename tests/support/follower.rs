//! A `--follow` reader of a projects folder on a thread of its own, polled every 100 ms while a
//! real CLI writes into it: what a live monitor would have shown, observed poll by poll.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use swarmtop::commands::Follow;
use swarmtop::model::Model;
use swarmtop::pipeline::Config;

pub struct Follower<S> {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Followed<S>>,
}

/// How many times the follower polled, and what `observe` gathered from its model.
pub struct Followed<S> {
    pub polls: usize,
    pub seen: S,
}

impl<S: Default + Send + 'static> Follower<S> {
    /// `observe` sees the model after every poll, the last one taken after the run has ended.
    pub fn start(projects: PathBuf, observe: fn(&mut S, &Model)) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut follow = Follow::start(&[projects], Config::default()).expect("following the projects folder");
            let mut out = Followed { polls: 0, seen: S::default() };
            loop {
                let last_round = flag.load(Ordering::SeqCst);
                follow.poll();
                out.polls += 1;
                observe(&mut out.seen, &follow.pipeline.model);
                if last_round {
                    return out;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Self { stop, handle }
    }

    /// One last poll after the run, then what it saw.
    pub fn stop(self) -> Followed<S> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().expect("the follower thread")
    }
}
