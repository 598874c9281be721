//! One long Codex app-server session, written as it is generated (2 GB never sits in memory):
//! a root that spawns 8 children at once, three of which spawn 2 grandchildren each, then talks to
//! them turn after turn for as long as the target size asks (about 14,000 turns per thread at
//! 2 GB). Every line has the shape of its 0.171.0 counterpart in `collab_v1.server.ndjson`: turns
//! open with a user message, reason, run a command, answer, report usage and end with
//! `turn/completed` carrying the turn's items; children's turns interleave.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::corpus::{Rng, WORDS};

const CHILDREN: usize = 8;
/// Children that spawn grandchildren, and how many each.
const PARENTS_OF_GRANDCHILDREN: usize = 3;
const GRANDCHILDREN_EACH: usize = 2;

/// A UUIDv7-looking id, the same in every run.
fn uuid(n: u64) -> String {
    let x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!(
        "01a2292d-{:04x}-7{:03x}-8{:03x}-{:012x}",
        (x >> 48) as u16,
        (x >> 36) as u16 & 0xfff,
        n as u16 & 0xfff,
        x & 0xffff_ffff_ffff
    )
}

fn words(rng: &mut Rng, n: u64) -> String {
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s
}

struct Thread {
    id: String,
    /// Index of the parent in the session's threads.
    parent: Option<usize>,
    usage: u64,
}

/// Writes the lines of one agent's turn into `lines` (in order; the caller interleaves agents).
struct Turn<'a> {
    rng: &'a mut Rng,
    ms: &'a mut u64,
    serial: &'a mut u64,
    thread: &'a str,
    id: String,
    lines: Vec<String>,
    /// `turn/completed` repeats the turn's items.
    items: Vec<String>,
}

impl Turn<'_> {
    fn tick(&mut self) -> u64 {
        *self.ms += self.rng.below(40);
        *self.ms
    }

    fn line(&mut self, method: &str, params: &str) {
        let ms = self.tick();
        self.lines.push(format!(r#"{{"method":"{method}","params":{params},"emittedAtMs":{ms}}}"#));
    }

    fn item(&mut self, item: &str, completed: bool) {
        let ms = *self.ms;
        let (method, at) =
            if completed { ("item/completed", "completedAtMs") } else { ("item/started", "startedAtMs") };
        let params = format!(r#"{{"item":{item},"threadId":"{}","turnId":"{}","{at}":{ms}}}"#, self.thread, self.id);
        self.line(method, &params);
        if completed {
            self.items.push(item.to_owned());
        }
    }

    fn next_id(&mut self) -> u64 {
        *self.serial += 1;
        *self.serial
    }

    fn user_message(&mut self, text: &str) {
        let id = uuid(self.next_id());
        let ms = *self.ms;
        let body = |done: &str| {
            format!(
                r#"{{"type":"userMessage","id":"{id}","clientId":null,"content":[{{"type":"text","text":"{text}","text_elements":[]}}],"startedAtMs":{ms},"completedAtMs":{done}}}"#
            )
        };
        self.item(&body("null"), false);
        self.item(&body(&ms.to_string()), true);
    }

    fn reasoning(&mut self) {
        let id = format!("rs_{}", self.next_id());
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        self.item(
            &format!(
                r#"{{"type":"reasoning","id":"{id}","summary":[],"content":[],"startedAtMs":{},"completedAtMs":null}}"#,
                self.ms
            ),
            false,
        );
        self.line(
            "item/reasoning/summaryPartAdded",
            &format!(r#"{{"threadId":"{thread}","turnId":"{turn}","itemId":"{id}","summaryIndex":0}}"#),
        );
        let mut summary = String::new();
        for _ in 0..3 + self.rng.below(6) {
            let n = 1 + self.rng.below(4);
            let delta = words(self.rng, n);
            summary.push_str(&delta);
            self.line(
                "item/reasoning/summaryTextDelta",
                &format!(
                    r#"{{"threadId":"{thread}","turnId":"{turn}","itemId":"{id}","delta":"{delta}","summaryIndex":0}}"#
                ),
            );
        }
        let ms = self.ms.to_string();
        self.item(&format!(r#"{{"type":"reasoning","id":"{id}","summary":["{summary}"],"content":[],"startedAtMs":{ms},"completedAtMs":{ms}}}"#), true);
    }

    fn command(&mut self) {
        let id = format!("call_{:016x}", self.rng.next());
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        let n = 2 + self.rng.below(3);
        let command = words(self.rng, n);
        let body = |status: &str, output: &str, exit: &str| {
            format!(
                r#"{{"type":"commandExecution","id":"{id}","pluginId":null,"scriptPath":null,"command":"/bin/bash -lc '{command}'","cwd":"/home/dev/project","processId":"27433","source":"unifiedExecStartup","status":"{status}","commandActions":[{{"type":"unknown","command":"{command}"}}],"aggregatedOutput":{output},"exitCode":{exit},"durationMs":null}}"#
            )
        };
        self.item(&body("inProgress", "null", "null"), false);
        let mut output = String::new();
        for _ in 0..2 + self.rng.below(8) {
            let n = 4 + self.rng.below(8);
            let delta = words(self.rng, n) + "\\n";
            output.push_str(&delta);
            self.line(
                "item/commandExecution/outputDelta",
                &format!(r#"{{"threadId":"{thread}","turnId":"{turn}","itemId":"{id}","delta":"{delta}"}}"#),
            );
        }
        self.item(&body("completed", &format!("\"{output}\""), "0"), true);
    }

    fn answer(&mut self) {
        let id = format!("msg_{}", self.next_id());
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        let body = |text: &str, done: &str| {
            format!(
                r#"{{"type":"agentMessage","moderation":null,"id":"{id}","text":"{text}","phase":null,"memoryCitation":null,"delivery":null,"questions":null,"startedAtMs":{done},"completedAtMs":{done}}}"#
            )
        };
        self.item(&body("", "null"), false);
        let mut text = String::new();
        for _ in 0..4 + self.rng.below(10) {
            let n = 1 + self.rng.below(4);
            let delta = words(self.rng, n);
            text.push_str(&delta);
            self.line(
                "item/agentMessage/delta",
                &format!(r#"{{"threadId":"{thread}","turnId":"{turn}","itemId":"{id}","delta":"{delta}"}}"#),
            );
        }
        let ms = self.ms.to_string();
        self.item(&body(&text, &ms), true);
    }

    fn usage(&mut self, total: u64) {
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        let usage = |t: u64| {
            format!(
                r#"{{"totalTokens":{t},"inputTokens":{},"cachedInputTokens":{},"cacheWriteInputTokens":0,"outputTokens":{},"reasoningOutputTokens":{}}}"#,
                t * 9 / 10,
                t / 2,
                t / 10,
                t / 40
            )
        };
        self.line(
            "thread/tokenUsage/updated",
            &format!(
                r#"{{"threadId":"{thread}","turnId":"{turn}","tokenUsage":{{"total":{},"last":{},"modelContextWindow":258400}}}}"#,
                usage(total),
                usage(900)
            ),
        );
        self.line(
            "account/rateLimits/updated",
            r#"{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":null,"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}"#,
        );
    }

    fn started(&mut self, root_turn: &str) {
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        self.line(
            "thread/status/changed",
            &format!(r#"{{"threadId":"{thread}","status":{{"type":"active","activeFlags":[]}}}}"#),
        );
        let at = *self.ms / 1000;
        self.line(
            "turn/started",
            &format!(
                r#"{{"threadId":"{thread}","turn":{{"id":"{turn}","rootTurnId":"{root_turn}","items":[],"itemsView":"notLoaded","status":"inProgress","error":null,"startedAt":{at},"completedAt":null,"durationMs":null}}}}"#
            ),
        );
    }

    fn completed(&mut self, root_turn: &str) {
        let (thread, turn) = (self.thread.to_owned(), self.id.clone());
        self.line("thread/status/changed", &format!(r#"{{"threadId":"{thread}","status":{{"type":"idle"}}}}"#));
        let items = self.items.join(",");
        self.line(
            "turn/completed",
            &format!(
                r#"{{"threadId":"{thread}","turn":{{"id":"{turn}","rootTurnId":"{root_turn}","items":[{items}],"itemsView":"full","status":"completed","error":null,"startedAt":null,"completedAt":null,"durationMs":null}}}}"#
            ),
        );
    }
}

/// Collab items of the root: `tool` to `receivers` (a spawn names its child only on completion).
fn collab(turn: &mut Turn<'_>, tool: &str, receivers: &[&str], prompt: &str) {
    let id = format!("call_{tool}_{}", turn.next_id());
    let sender = turn.thread.to_owned();
    let list = |r: &[&str]| r.iter().map(|r| format!("\"{r}\"")).collect::<Vec<_>>().join(",");
    let states = receivers
        .iter()
        .map(|r| format!(r#""{r}":{{"status":"running","message":null}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let spawn = tool == "spawnAgent";
    let (model, started_receivers) = if spawn { (r#""gpt-5.5""#, String::new()) } else { ("null", list(receivers)) };
    let body = |status: &str, receivers: &str, states: &str, model: &str| {
        format!(
            r#"{{"type":"collabAgentToolCall","id":"{id}","tool":"{tool}","status":"{status}","senderThreadId":"{sender}","receiverThreadIds":[{receivers}],"prompt":"{prompt}","model":{model},"reasoningEffort":"medium","agentsStates":{{{states}}}}}"#
        )
    };
    let started_model = if spawn { r#""""# } else { "null" };
    turn.item(&body("inProgress", &started_receivers, "", started_model), false);
    if spawn {
        let child = receivers[0].to_owned();
        turn.line("thread/status/changed", &format!(r#"{{"threadId":"{child}","status":{{"type":"idle"}}}}"#));
    }
    turn.item(&body("completed", &list(receivers), &states, model), true);
}

/// Round-robin with a random stride: concurrent agents' lines interleave as they do on the wire.
fn interleave(rng: &mut Rng, mut agents: Vec<Vec<String>>, out: &mut Vec<String>) {
    let mut at: Vec<usize> = vec![0; agents.len()];
    loop {
        let live: Vec<usize> = (0..agents.len()).filter(|&a| at[a] < agents[a].len()).collect();
        if live.is_empty() {
            break;
        }
        let a = live[rng.below(live.len() as u64) as usize];
        let n = 1 + rng.below(6) as usize;
        let end = (at[a] + n).min(agents[a].len());
        out.extend(agents[a][at[a]..end].iter_mut().map(std::mem::take));
        at[a] = end;
    }
}

/// The root, its children, and the grandchildren under the first few children.
fn tree() -> Vec<Thread> {
    let mut threads = vec![Thread { id: uuid(1), parent: None, usage: 0 }];
    for c in 0..CHILDREN {
        threads.push(Thread { id: uuid(2 + c as u64), parent: Some(0), usage: 0 });
    }
    for p in 0..PARENTS_OF_GRANDCHILDREN {
        for g in 0..GRANDCHILDREN_EACH {
            threads.push(Thread { id: uuid(100 + (p * GRANDCHILDREN_EACH + g) as u64), parent: Some(1 + p), usage: 0 });
        }
    }
    threads
}

/// At least `target_bytes` of one session's NDJSON, written to `out` as it is made.
pub fn write(out: &mut impl Write, target_bytes: u64) -> io::Result<u64> {
    let mut rng = Rng(0x10e6_5e55_1011_cafe);
    let mut ms: u64 = 1_795_987_208_000;
    let mut serial: u64 = 1 << 20;
    let mut threads = tree();
    let root = threads[0].id.clone();
    let mut written = 0u64;
    let mut text = String::new();
    let _ = writeln!(
        text,
        r#"{{"method":"thread/started","params":{{"thread":{{"id":"{root}","sessionId":"{root}","forkedFromId":null,"parentThreadId":null,"preview":"","ephemeral":false,"model":"gpt-5.5","agentNickname":null,"agentRole":null,"status":{{"type":"idle"}}}}}},"emittedAtMs":{ms}}}"#
    );
    let mut round = 0u64;
    while written + text.len() as u64 <= target_bytes {
        let root_turn = uuid(serial + 7);
        serial += 8;
        let mut lead = Turn {
            rng: &mut rng,
            ms: &mut ms,
            serial: &mut serial,
            thread: &root,
            id: root_turn.clone(),
            lines: Vec::new(),
            items: Vec::new(),
        };
        lead.started(&root_turn);
        lead.user_message(&format!(
            "LEAD-TASK {round}: {}",
            if round == 0 { "fan out to eight helpers" } else { "next step" }
        ));
        lead.reasoning();
        let children: Vec<String> = threads.iter().filter(|t| t.parent == Some(0)).map(|t| t.id.clone()).collect();
        for (c, child) in children.iter().enumerate() {
            let tool = if round == 0 { "spawnAgent" } else { "sendInput" };
            collab(&mut lead, tool, &[child.as_str()], &format!("[task:helper-{c}] part {c} of step {round}"));
        }
        let names: Vec<&str> = children.iter().map(String::as_str).collect();
        collab(&mut lead, "wait", &names, "");
        let mut lines = std::mem::take(&mut lead.lines);
        let lead_items = std::mem::take(&mut lead.items);
        drop(lead);
        // Every agent below the root runs one turn of this round, concurrently.
        let mut agents = Vec::new();
        for t in 1..threads.len() {
            let (thread, parent) = (threads[t].id.clone(), threads[t].parent);
            let turn_id = uuid(serial + 3);
            serial += 4;
            let mut turn = Turn {
                rng: &mut rng,
                ms: &mut ms,
                serial: &mut serial,
                thread: &thread,
                id: turn_id,
                lines: Vec::new(),
                items: Vec::new(),
            };
            turn.started(&root_turn);
            turn.user_message(&format!("CHILD-TASK {t} step {round}"));
            turn.reasoning();
            if round == 0 && parent == Some(0) && t <= PARENTS_OF_GRANDCHILDREN {
                for g in 0..GRANDCHILDREN_EACH {
                    let grandchild = threads[1 + CHILDREN + (t - 1) * GRANDCHILDREN_EACH + g].id.clone();
                    collab(&mut turn, "spawnAgent", &[grandchild.as_str()], &format!("[task:sub-{t}-{g}] dig deeper"));
                }
            }
            turn.command();
            turn.answer();
            let total = {
                let u = &mut threads[t].usage;
                *u += 800 + turn.rng.below(2000);
                *u
            };
            turn.usage(total);
            turn.completed(&root_turn);
            agents.push(turn.lines);
        }
        interleave(&mut rng, agents, &mut lines);
        let mut lead = Turn {
            rng: &mut rng,
            ms: &mut ms,
            serial: &mut serial,
            thread: &root,
            id: root_turn.clone(),
            lines,
            items: lead_items,
        };
        lead.answer();
        threads[0].usage += 1500 + lead.rng.below(3000);
        lead.usage(threads[0].usage);
        lead.completed(&root_turn);
        for l in &lead.lines {
            text.push_str(l);
            text.push('\n');
        }
        out.write_all(text.as_bytes())?;
        written += text.len() as u64;
        text.clear();
        round += 1;
    }
    out.write_all(text.as_bytes())?;
    Ok(written + text.len() as u64)
}
