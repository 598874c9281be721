//! `subagents/agent-<agentId>.meta.json` (Claude Code 2.1.332, wire.md §6): one JSON object written
//! when the sub-agent starts and rewritten with `finished: true` when it ends. It is the only link a
//! 2.1.332 child has to its parent while it runs (no progress lines), and the only link at all for a
//! grandchild (its hand-back has no `toolUseResult`).
//!
//! The file says nothing of its own agent id or session: the source passes both in the record's
//! [`Origin`] (the file's name, its `<sessionId>/subagents/` folder).

use std::borrow::Cow;

use serde::Deserialize;

use crate::wire::fact::{
    Fact, Format, Lowered, Parentage, Spawn, StatusChange, StatusFact, Subject, Target, ThreadFact, Via, Weight,
};
use crate::wire::origin::Origin;
use crate::wire::sanitize;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sidecar<'a> {
    #[serde(borrow, default)]
    pub agent_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub description: Option<Cow<'a, str>>,
    /// The spawning tool use: the child's card in its parent.
    #[serde(borrow, default)]
    pub tool_use_id: Option<Cow<'a, str>>,
    /// The spawning sub-agent, at depth >= 2; absent: the session.
    #[serde(borrow, default)]
    pub parent_agent_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub spawn_depth: Option<u32>,
    /// What the spawn asked for: an alias (`haiku`), or the session's model when it named none.
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub model_not_named: Option<bool>,
    #[serde(default)]
    pub finished: Option<bool>,
}

pub fn parse(text: &str) -> Option<Sidecar<'_>> {
    // serde would read `[]` as a struct of defaults.
    text.trim_start().starts_with('{').then(|| serde_json::from_str(text).ok())?
}

/// Lowers a sidecar read from `origin` (whose `thread` is the agent id). `None` when the text is not
/// a sidecar object: the caller counts it malformed.
pub fn lower<'l>(text: &'l str, origin: &Origin, out: &mut Lowered<'l>) -> Option<()> {
    let meta = parse(text)?;
    out.format = Format::ClaudeTranscript;
    out.weight = Weight::Noise;
    let info = origin.info();
    let agent = origin.thread()?.to_owned();
    let session = info.and_then(|i| i.session.as_deref());
    let parent = meta.parent_agent_id.as_deref().or(session).map(str::to_owned);
    let card = meta.tool_use_id.as_deref().map(|c| Cow::Owned(c.to_owned()));
    out.subject = parent.clone().map_or(Subject::Control, |p| Subject::Thread(Cow::Owned(p)));
    let parentage = match &parent {
        Some(p) => Parentage::Child { parent: Cow::Owned(p.clone()), via: Via::TaskTool, card: card.clone() },
        None => Parentage::Unknown,
    };
    let mut thread = ThreadFact::new(Cow::Owned(agent.clone()), parentage);
    thread.nickname = meta.description.as_deref().filter(|d| !d.is_empty()).map(sanitize);
    thread.role = meta.agent_type.as_deref().filter(|r| !r.is_empty()).map(sanitize);
    // An alias (`haiku`) is not a model id: the child's own lines name what it resolved to.
    thread.model = meta.model.as_deref().filter(|m| m.contains('-')).map(sanitize);
    thread.depth = meta.spawn_depth;
    out.facts.push(Fact::Thread(Box::new(thread)));
    if parent.is_some() {
        out.facts.push(Fact::Spawn(Spawn { child: Cow::Owned(agent.clone()), card, via: Via::TaskTool }));
    }
    // `finished` is written on success and on failure alike: it ends work, and a failure the child's
    // own lines stated stays. Applied ahead of the agent's lines, the sidecar is as it was then.
    if meta.finished == Some(true) && !info.is_some_and(|i| i.ahead) {
        out.facts
            .push(Fact::Status(StatusFact { target: Target::Thread(Cow::Owned(agent)), change: StatusChange::Idle }));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Clean;
    use crate::wire::OriginInfo;

    // The struct update keeps this compiling when the source learns more about a file.
    #[allow(clippy::needless_update)]
    fn origin(agent: &str, session: Option<&str>) -> Origin {
        Origin::new(OriginInfo {
            thread: Some(agent.into()),
            session: session.map(Into::into),
            sidecar: true,
            ..OriginInfo::default()
        })
    }

    fn lowered(text: &str, origin: &Origin, check: impl FnOnce(&Lowered<'_>, Vec<&Fact<'_>>)) {
        let mut out = Lowered { raw: text, ..Lowered::default() };
        lower(text, origin, &mut out).expect("a sidecar");
        let facts: Vec<&Fact<'_>> = out.facts.iter().collect();
        check(&out, facts);
    }

    #[test]
    fn a_child_is_linked_to_the_session_under_its_card_while_it_runs() {
        let meta = r#"{"agentType":"general-purpose","isBuiltIn":true,"description":"Check the docs","toolUseId":"toolu_docs","spawnDepth":1,"requestShape":"foreground","requestNonInteractive":true,"model":"haiku","pickedEffortModel":"claude-sonnet-4-5"}"#;
        lowered(meta, &origin("afc0e3e190de53167", Some("s")), |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()), "said about the session's child");
            let Fact::Thread(t) = f[0] else { panic!("{:?}", f[0]) };
            assert_eq!(t.thread, "afc0e3e190de53167");
            assert_eq!(
                t.parentage,
                Parentage::Child { parent: "s".into(), via: Via::TaskTool, card: Some("toolu_docs".into()) }
            );
            assert_eq!(t.nickname.as_ref().map(Clean::as_str), Some("Check the docs"));
            assert_eq!(t.role.as_ref().map(Clean::as_str), Some("general-purpose"));
            assert!(t.model.is_none(), "an alias is not a model");
            assert_eq!(t.depth, Some(1));
            assert!(
                matches!(f[1], Fact::Spawn(s) if s.child == "afc0e3e190de53167" && s.card.as_deref() == Some("toolu_docs"))
            );
            assert_eq!(f.len(), 2, "running: no end yet");
        });
    }

    #[test]
    fn a_grandchild_is_linked_to_its_parent_agent_and_finished_ends_it() {
        let meta = r#"{"agentType":"general-purpose","description":"Grep the sources","toolUseId":"toolu_grep","parentAgentId":"ae619a55e284d8948","spawnDepth":2,"requestShape":"foreground","model":"claude-sonnet-4-5","modelNotNamed":true,"finished":true}"#;
        lowered(meta, &origin("a2404d06973672547", Some("s")), |l, f| {
            assert_eq!(l.subject, Subject::Thread("ae619a55e284d8948".into()));
            let Fact::Thread(t) = f[0] else { panic!() };
            assert!(matches!(&t.parentage, Parentage::Child { parent, .. } if parent == "ae619a55e284d8948"));
            assert_eq!(t.model.as_ref().map(Clean::as_str), Some("claude-sonnet-4-5"));
            assert!(matches!(f[2], Fact::Status(s)
                if s.target == Target::Thread("a2404d06973672547".into()) && s.change == StatusChange::Idle));
        });
        // Applied ahead of the agent's first line, it links the agent and ends nothing yet.
        let ahead = Origin::new(OriginInfo {
            ahead: true,
            ..origin("a2404d06973672547", Some("s")).info().cloned().expect("info")
        });
        lowered(meta, &ahead, |_, f| assert_eq!(f.len(), 2, "linked, not ended: {f:?}"));
    }

    #[test]
    fn without_its_session_a_sidecar_still_names_its_agent() {
        let meta = r#"{"description":"Survey","toolUseId":"toolu_1","spawnDepth":1}"#;
        lowered(meta, &origin("a1", None), |l, f| {
            assert_eq!(l.subject, Subject::Control);
            assert!(matches!(f[0], Fact::Thread(t) if t.parentage == Parentage::Unknown));
            assert_eq!(f.len(), 1);
        });
        let mut out = Lowered::default();
        assert!(lower("[1,2]", &origin("a1", None), &mut out).is_none());
    }
}
