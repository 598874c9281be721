//! A deterministic corpus of realistic app-server traffic for benchmarks: a few sessions that fan
//! out to children and grandchildren, interleaved, with the shapes of the 0.171.0 captures.
//! About 70 % of the lines are stream deltas, as in real sessions.

use std::fmt::Write as _;

/// A small deterministic xorshift generator: the corpora are the same in every run.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Words the generated deltas and prompts are made of.
pub(crate) const WORDS: &[&str] = &[
    "the",
    "parser",
    "returns",
    "an",
    "error",
    "when",
    "token",
    "is",
    "expired;",
    "refactor",
    "auth",
    "module",
    "so",
    "verify_token",
    "checks",
    "the",
    "signature",
    "first.",
    "Running",
    "cargo",
    "test",
    "-p",
    "auth",
    "\\n",
    "ok",
];

fn id(session: usize, thread: usize) -> String {
    format!("01a2292d-{session:04x}-7{thread:03x}-8000-{:012x}", session * 1000 + thread)
}

/// At least `target_bytes` of NDJSON (each line ends in `\n`).
pub fn generate(target_bytes: usize) -> Vec<u8> {
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let mut out = String::with_capacity(target_bytes + (1 << 20));
    let mut ms: u64 = 1_795_987_208_000;
    let mut session = 0;
    while out.len() < target_bytes {
        session += 1;
        // Root, 8 children, 2 grandchildren under each of the first 3 children.
        let mut parents = vec![None];
        for _ in 0..8 {
            parents.push(Some(0));
        }
        for c in 1..=3 {
            parents.push(Some(c));
            parents.push(Some(c));
        }
        let n = parents.len();
        let root = id(session, 0);
        let _ = writeln!(
            out,
            r#"{{"method":"thread/started","params":{{"thread":{{"id":"{root}","parentThreadId":null,"source":"vscode","model":"gpt-5.5","agentNickname":null}}}},"emittedAtMs":{ms}}}"#
        );
        let mut item_no = 0u64;
        let mut usage = vec![0u64; n];
        // Rounds: every live thread emits a burst; spawns happen in the first round.
        for round in 0..40 {
            for t in 0..n {
                ms += rng.below(5);
                let tid = id(session, t);
                let turn = format!("turn-{session}-{t}");
                if round == 0 {
                    if let Some(p) = parents[t] {
                        let pid = id(session, p);
                        let _ = writeln!(
                            out,
                            r#"{{"method":"thread/status/changed","params":{{"threadId":"{tid}","status":{{"type":"idle"}}}},"emittedAtMs":{ms}}}"#
                        );
                        let _ = writeln!(
                            out,
                            r#"{{"method":"item/completed","params":{{"item":{{"type":"collabAgentToolCall","id":"call_spawn_{t}","tool":"spawnAgent","status":"completed","senderThreadId":"{pid}","receiverThreadIds":["{tid}"],"prompt":"CHILD-TASK-{t}","model":"gpt-5.6-luna","reasoningEffort":"low","agentsStates":{{}}}},"threadId":"{pid}","turnId":"turn-{session}-{p}"}},"emittedAtMs":{ms}}}"#
                        );
                    }
                    let _ = writeln!(
                        out,
                        r#"{{"method":"turn/started","params":{{"threadId":"{tid}","turn":{{"id":"{turn}","rootTurnId":"turn-{session}-0","items":[],"status":"inProgress","error":null}}}},"emittedAtMs":{ms}}}"#
                    );
                    continue;
                }
                item_no += 1;
                let item = format!("msg_{item_no}");
                let kind = if rng.below(3) == 0 { "reasoning" } else { "agentMessage" };
                let _ = writeln!(
                    out,
                    r#"{{"method":"item/started","params":{{"item":{{"type":"{kind}","id":"{item}","text":"","summary":[],"content":[]}},"threadId":"{tid}","turnId":"{turn}","startedAtMs":{ms}}},"emittedAtMs":{ms}}}"#
                );
                let deltas = 5 + rng.below(9);
                let mut text = String::new();
                for _ in 0..deltas {
                    let mut delta = String::new();
                    for _ in 0..=rng.below(4) {
                        delta.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
                        delta.push(' ');
                    }
                    text.push_str(&delta);
                    let method =
                        if kind == "reasoning" { "item/reasoning/summaryTextDelta" } else { "item/agentMessage/delta" };
                    let _ = writeln!(
                        out,
                        r#"{{"method":"{method}","params":{{"threadId":"{tid}","turnId":"{turn}","itemId":"{item}","delta":"{delta}","summaryIndex":0}},"emittedAtMs":{ms}}}"#
                    );
                }
                let _ = writeln!(
                    out,
                    r#"{{"method":"item/completed","params":{{"item":{{"type":"{kind}","id":"{item}","text":"{text}","summary":[],"content":[],"phase":null}},"threadId":"{tid}","turnId":"{turn}","completedAtMs":{ms}}},"emittedAtMs":{ms}}}"#
                );
                usage[t] += 500 + rng.below(1500);
                let u = usage[t];
                let _ = writeln!(
                    out,
                    r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"{tid}","turnId":"{turn}","tokenUsage":{{"total":{{"totalTokens":{u},"inputTokens":{},"cachedInputTokens":{},"cacheWriteInputTokens":0,"outputTokens":{},"reasoningOutputTokens":0}},"last":{{"totalTokens":900,"inputTokens":800,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":100,"reasoningOutputTokens":0}},"modelContextWindow":258400}}}},"emittedAtMs":{ms}}}"#,
                    u * 9 / 10,
                    u / 2,
                    u / 10
                );
                let _ = writeln!(
                    out,
                    r#"{{"method":"account/rateLimits/updated","params":{{"rateLimits":{{"limitId":"codex","primary":null}}}},"emittedAtMs":{ms}}}"#
                );
            }
        }
        for t in 0..n {
            let tid = id(session, t);
            let _ = writeln!(
                out,
                r#"{{"method":"turn/completed","params":{{"threadId":"{tid}","turn":{{"id":"turn-{session}-{t}","status":"completed","error":null}}}},"emittedAtMs":{ms}}}"#
            );
        }
    }
    out.into_bytes()
}

/// Fraction of lines that are deltas.
pub fn delta_share(corpus: &[u8]) -> f64 {
    let lines = corpus.split(|&b| b == b'\n').filter(|l| !l.is_empty());
    let (mut all, mut deltas) = (0u64, 0u64);
    for l in lines {
        all += 1;
        if memchr::memmem::find(&l[..l.len().min(60)], b"elta\"").is_some()
            || memchr::memmem::find(&l[..l.len().min(60)], b"Delta\"").is_some()
        {
            deltas += 1;
        }
    }
    deltas as f64 / all.max(1) as f64
}
