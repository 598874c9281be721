//! Claude Code transcripts (wire.md §6) through the same pipeline: a session, its Task sub-agent and
//! its compaction side-chain, against the figures known for the capture (tests/fixtures/README.md).

use std::path::PathBuf;

use swarmtop::commands::{self, stats};
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::router::{Event, Role};

const SESSION: &str = "4d5611e5-241a-462a-8d15-5122611a9569";

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.39")
}

fn ingest(paths: &[PathBuf]) -> Pipeline {
    let p = commands::ingest(paths, Config::default(), &mut |_: &Event<'_, '_>| {}).expect("fixture reads");
    assert!(p.counters().conserved());
    p
}

#[test]
fn usage_is_deduplicated_per_response_and_attributed_per_agent() {
    let p = ingest(&[fixture()]);
    assert_eq!(p.format(), "claude-transcript");
    let c = p.counters();
    assert_eq!((c.malformed, c.orphan_threads, c.pending_at_end), (0, 0, 0));
    let m = &p.model;
    assert_eq!(m.threads.len(), 2, "the compaction side-chain is the session's own work, not an agent");
    let root = m.thread(p.find(SESSION).unwrap());
    let agent = m.thread(p.find("a2898e3").unwrap());
    assert_eq!(root.role, Role::Root);
    assert_eq!(agent.role, Role::Child);
    assert_eq!(agent.via, Some(swarmtop::router::Via::TaskTool));
    assert_eq!(agent.card.as_deref(), Some("toolu_017pLRuPHYTX5t99EnLyV53m"));
    assert_eq!(agent.name(), "Explore transcript rendering codebase");
    // Deduplicated by (message.id, requestId): 604,156 cache reads, not the naive 1,111,046.
    assert_eq!(agent.tokens.cached_input, 604_156);
    // The session's 11,618,567 plus its compaction call's 164,830.
    assert_eq!(root.tokens.cached_input, 11_618_567 + 164_830);
    assert_eq!(root.model.as_ref().unwrap().as_str(), "claude-opus-4-6");
    assert_eq!(agent.model.as_ref().unwrap().as_str(), "claude-sonnet-4-5-20250929");
    // Sonnet 4.5 (dated name): 53 x 3 + 71,257 x 3.75 + 604,156 x 0.3 + 136 x 15 = 450,659.55 USD per million.
    assert_eq!(agent.cost.unwrap().to_string(), "0.45065955");
    assert_eq!(root.subtree.threads, 2);
    assert_eq!(agent.status, swarmtop::model::Status::Idle);
}

#[test]
fn the_sub_agent_file_alone_is_an_orphan_until_its_session_comes() {
    let sub = fixture().join(SESSION).join("subagents/agent-a2898e3.jsonl");
    let p = ingest(std::slice::from_ref(&sub));
    assert_eq!(p.model.thread(p.find("a2898e3").unwrap()).role, Role::Orphan);
    // Read before its session, it moves under its card when the session announces it.
    let p = ingest(&[sub, fixture().join(format!("{SESSION}.jsonl"))]);
    let agent = p.model.thread(p.find("a2898e3").unwrap());
    assert_eq!(agent.role, Role::Child);
    assert_eq!(agent.tokens.cached_input, 604_156);
}

#[test]
fn stats_json() {
    insta::assert_snapshot!(stats::render_json_pretty(&ingest(&[fixture()])));
}

/// Interactive 2.1.332 transcripts put a snake-case `session_id` beside `sessionId` on assistant
/// and attachment lines; after `/clear` the snake one still names the session before it. The
/// lines are the new session's transcript lines, not stream-json naming another session.
#[test]
fn an_interactive_transcript_after_clear_is_its_own_session() {
    let old = "1875eb03-8585-46d6-ab1c-9fdaad8b8a70";
    let new = "6c179e70-ddb5-41ca-8088-e50d5a44a1bd";
    let common = format!(
        r#""isSidechain":false,"userType":"external","entrypoint":"cli","cwd":"/work/p","sessionId":"{new}","version":"2.1.332""#
    );
    let assistant = |uuid: &str, parent: &str, msg: &str, at: &str| {
        format!(
            r#"{{"parentUuid":"{parent}","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{{"type":"text","text":"hello there"}}],"stop_reason":"end_turn","usage":{{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}}},"requestId":"req_{msg}","type":"assistant","uuid":"{uuid}","timestamp":"{at}","session_id":"{old}",{common}}}"#
        )
    };
    let lines = [
        format!(
            r#"{{"parentUuid":null,"type":"user","message":{{"role":"user","content":"<command-name>/clear</command-name>"}},"uuid":"u0","timestamp":"2026-12-01T14:38:40.377Z",{common}}}"#
        ),
        format!(
            r#"{{"parentUuid":"u0","type":"user","message":{{"role":"user","content":"say bye"}},"uuid":"u1","timestamp":"2026-12-01T14:38:43.380Z","origin":{{"kind":"human"}},{common}}}"#
        ),
        format!(
            r#"{{"parentUuid":"u1","attachment":{{"type":"date","date":"2026-12-01"}},"type":"attachment","uuid":"a1","timestamp":"2026-12-01T14:38:43.408Z","session_id":"{old}",{common}}}"#
        ),
        assistant("m1", "a1", "msg_1", "2026-12-01T14:38:44.000Z"),
        format!(
            r#"{{"parentUuid":"m1","type":"user","message":{{"role":"user","content":"more"}},"uuid":"u2","timestamp":"2026-12-01T14:38:53.992Z",{common}}}"#
        ),
        assistant("m2", "u2", "msg_2", "2026-12-01T14:38:55.000Z"),
        format!(
            r#"{{"type":"cost-state","sessionId":"{new}","totalCostUSD":0.0005,"modelUsage":{{"claude-opus-4-6":{{"inputTokens":20,"outputTokens":10,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0005}}}}}}"#
        ),
    ];
    let dir = std::env::temp_dir().join(format!("swarmtop-clear-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{new}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let p = ingest(std::slice::from_ref(&file));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(p.format(), "claude-transcript");
    let c = p.counters();
    assert_eq!((c.malformed, c.orphan_threads), (0, 0));
    assert_eq!(p.model.threads.len(), 1, "no thread for the session before the /clear");
    let root = p.model.thread(p.find(new).expect("the new session"));
    assert_eq!(root.role, Role::Root);
    assert_eq!(root.tokens.total, 30, "both responses, once each");
    assert!(p.find(old).is_none());
}

/// A 2.1.332 sub-agent's `meta.json` read before any line of its session (a folder listed in another
/// order, a follower that sees the sidecar first) waits with the session's lines, and names the
/// sub-agent when it is replayed — not the session.
#[test]
fn a_sidecar_read_before_its_session_names_its_agent() {
    let session = "11111111-2222-3333-4444-555555555555";
    let dir = tempfile::tempdir().unwrap();
    let subagents = dir.path().join(session).join("subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    let meta = subagents.join("agent-abc123.meta.json");
    std::fs::write(
        &meta,
        r#"{"agentType":"general-purpose","description":"scout the repo","toolUseId":"toolu_1","spawnDepth":1}"#,
    )
    .unwrap();
    let transcript = dir.path().join(format!("{session}.jsonl"));
    std::fs::write(
        &transcript,
        format!(
            r#"{{"type":"user","uuid":"u1","sessionId":"{session}","timestamp":"2026-12-01T10:00:00.000Z","message":{{"role":"user","content":"look around"}}}}
{{"type":"assistant","uuid":"a1","sessionId":"{session}","timestamp":"2026-12-01T10:00:01.000Z","requestId":"req_1","message":{{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"Agent","input":{{"description":"look in src","prompt":"go"}}}}],"usage":{{"input_tokens":10,"output_tokens":5}}}}}}
"#
        ),
    )
    .unwrap();
    let p = ingest(&[meta, transcript]);
    let root = p.model.thread(p.find(session).unwrap());
    let agent = p.model.thread(p.find("abc123").unwrap());
    assert_eq!(root.nickname, None, "the session is not named by its child's sidecar");
    assert_eq!(agent.name(), "scout the repo");
    assert_eq!(agent.agent_role.as_ref().map(ToString::to_string).as_deref(), Some("general-purpose"));
    assert_eq!((agent.role, agent.card.as_deref()), (Role::Child, Some("toolu_1")));
}
