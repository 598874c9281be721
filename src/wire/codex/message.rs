//! A Codex app-server message as decoded, possibly inside a recording envelope (recording.md).
//! Strings borrow from the record unless they hold escapes.
//!
//! The reducer needs a handful of fields; only those are typed, and a wrong type there makes the
//! line malformed (routing.md §3). Everything else is skipped without being built. Fields whose
//! shape differs between methods (`status`, `error`, item contents) stay raw JSON until a consumer
//! that knows the method asks for them.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::methods::Method;
use crate::wire::fact::Breakdown;
use crate::wire::json::{BStr, Raw, Str, opt_str, opt_vec_str, req_str};
use crate::wire::malformed::{Malformed, Shape, ShapeKeys};

/// Which side sent a line, from its recording envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    ServerToClient,
    ClientToServer,
    /// A one-way source (stdin, listen): the side is told by the method name.
    In,
    /// No envelope at all: likewise.
    Bare,
}

#[derive(Debug, Default)]
pub struct Message<'a> {
    pub method: Option<Str<'a>>,
    /// `method`, named once for the stages that branch on it.
    pub kind: Method,
    pub has_id: bool,
    pub params: Params<'a>,
    /// Only responses whose result is an object; other results carry nothing the reducer needs.
    pub result: Option<Box<ResultBody<'a>>>,
    pub emitted_at_ms: Option<i64>,
    /// `{"swarmtop": "recording" | "live" | "lagged" | "end", …}`: a header or socket marker.
    pub swarmtop: Option<Str<'a>>,
}

impl Message<'_> {
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The thread a line belongs to: `params.threadId`, or `params.thread.id` for `thread/started`.
    pub fn thread_id(&self) -> Option<&str> {
        self.params.thread_id.as_deref().or_else(|| self.params.rest().thread.as_ref().map(|t| &*t.id))
    }
}

/// The params a line carries. The fields of stream deltas — most lines — are inline; the rest
/// sit behind one box, so a line stays small as it moves from decoder to router to model.
#[derive(Debug, Default)]
pub struct Params<'a> {
    pub thread_id: Option<Str<'a>>,
    pub turn_id: Option<Str<'a>>,
    pub item_id: Option<Str<'a>>,
    pub delta: Option<Str<'a>>,
    pub summary_index: Option<i64>,
    pub content_index: Option<i64>,
    rest: Option<Box<ParamsRest<'a>>>,
}

#[derive(Debug, Default)]
pub struct ParamsRest<'a> {
    pub thread: Option<ThreadInfo<'a>>,
    pub turn: Option<TurnInfo<'a>>,
    pub item: Option<Item<'a>>,
    pub token_usage: Option<TokenUsage>,
    /// `thread/status/changed` has an object here; other methods use the key for strings.
    pub status: Option<Raw<'a>>,
    pub will_retry: Option<bool>,
    pub error: Option<Raw<'a>>,
    pub to_model: Option<Str<'a>>,
    pub settings_model: Option<Str<'a>>,
    pub message: Option<Raw<'a>>,
    pub name: Option<Raw<'a>>,
}

static NO_REST: ParamsRest<'static> = ParamsRest {
    thread: None,
    turn: None,
    item: None,
    token_usage: None,
    status: None,
    will_retry: None,
    error: None,
    to_model: None,
    settings_model: None,
    message: None,
    name: None,
};

impl<'a> Params<'a> {
    /// Everything but the delta fields (all `None` when the line had none of them).
    pub fn rest(&self) -> &ParamsRest<'a> {
        self.rest.as_deref().unwrap_or(&NO_REST)
    }

    pub(super) fn rest_mut(&mut self) -> &mut ParamsRest<'a> {
        self.rest.get_or_insert_with(Box::default)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadInfo<'a> {
    #[serde(borrow, deserialize_with = "req_str")]
    pub id: Str<'a>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub parent_thread_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub source: Option<Raw<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_nickname: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_role: Option<Str<'a>>,
}

/// `thread.source.subAgent.thread_spawn` (snake_case inside `source`, wire.md §3).
#[derive(Debug, Default, Deserialize)]
pub struct ThreadSpawn<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub parent_thread_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_path: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_nickname: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_role: Option<Str<'a>>,
}

impl<'a> ThreadInfo<'a> {
    /// The spawn facts inside `source`, when `source` is the object form (it is a plain string
    /// such as `"vscode"` for root threads).
    pub fn spawn(&self) -> Option<ThreadSpawn<'a>> {
        #[derive(Deserialize)]
        struct Source<'a> {
            #[serde(rename = "subAgent", borrow)]
            sub_agent: Option<SubAgent<'a>>,
        }
        #[derive(Deserialize)]
        struct SubAgent<'a> {
            #[serde(borrow)]
            thread_spawn: Option<ThreadSpawn<'a>>,
        }
        let raw = self.source?.get();
        if !raw.starts_with('{') {
            return None;
        }
        serde_json::from_str::<Source<'a>>(raw).ok()?.sub_agent?.thread_spawn
    }

    /// The parent named by `parentThreadId`, else by `source.subAgent.thread_spawn`.
    pub fn parent(&self) -> Option<Cow<'a, str>> {
        match &self.parent_thread_id {
            Some(p) if !p.is_empty() => Some(p.clone()),
            _ => self.spawn()?.parent_thread_id.filter(|p| !p.is_empty()),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInfo<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub root_turn_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub error: Option<Raw<'a>>,
}

/// A thread item. The router reads the registration fields; display fields stay raw.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
    /// A string for collab calls; other item types may use the key otherwise.
    #[serde(borrow, default)]
    pub tool: Option<Raw<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_vec_str")]
    pub receiver_thread_ids: Option<Vec<Str<'a>>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model: Option<Str<'a>>,
    /// `subAgentActivity`: `started`, `interacted`, `interrupted`, `completed`.
    #[serde(rename = "kind", borrow, default, deserialize_with = "opt_str")]
    pub activity: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_thread_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_path: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub prompt: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub text: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub summary: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub content: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub command: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub aggregated_output: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub exit_code: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub changes: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub server: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub query: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub error: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub agents_states: Option<Raw<'a>>,
}

impl Item<'_> {
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("")
    }
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default)]
    pub total: Option<Breakdown>,
    #[serde(default)]
    pub last: Option<Breakdown>,
    #[serde(default)]
    pub model_context_window: Option<u64>,
}

/// `result` of a response, when it is an object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultBody<'a> {
    #[serde(borrow, default)]
    pub thread: Option<ThreadInfo<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model_provider: Option<Str<'a>>,
}

/// What the top level left for after the message's own members: params given before the
/// method, and an object result.
pub(crate) fn finish<'a>(msg: &mut Message<'a>, parts: Parts<'a>) -> Result<(), Malformed> {
    if let Some(raw) = parts.late_params {
        let full = msg.method.as_deref().is_some_and(wants_full_params);
        msg.params = ParamsSeed { full }
            .deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
            .map_err(|e| json_error(&e))?;
    }
    if let Some(raw) = parts.result {
        if raw.get().starts_with('{') {
            msg.result = Some(serde_json::from_str(raw.get()).map_err(|e| json_error(&e))?);
        }
    }
    msg.kind = msg.method.as_deref().map_or(Method::Absent, Method::of);
    Ok(())
}

/// Whether the top level was a Codex message or swarmtop marker at all (else another format's line).
pub(crate) fn is_message(msg: &Message<'_>) -> bool {
    msg.method.is_some() || msg.has_id || msg.swarmtop.is_some()
}

/// A serde error as a reason: broken JSON, or JSON of the wrong shape.
pub(crate) fn json_error(e: &serde_json::Error) -> Malformed {
    match e.classify() {
        serde_json::error::Category::Data => Malformed::WrongType(e.to_string()),
        _ => Malformed::NotJson(e.to_string()),
    }
}

/// The methods whose params the reducer or the model read beyond `threadId`. For any other method
/// only `threadId` is typed, so an unfamiliar method reusing a key for another shape is still
/// routed (wire.md §1: unknown methods must be tolerated).
pub(crate) fn wants_full_params(method: &str) -> bool {
    method.starts_with("item/")
        || method.starts_with("turn/")
        || matches!(
            method,
            "thread/started"
                | "thread/status/changed"
                | "thread/tokenUsage/updated"
                | "thread/settings/updated"
                | "thread/closed"
                | "thread/name/updated"
                | "error"
                | "warning"
                | "model/rerouted"
                | "serverRequest/resolved"
                | "configWarning"
                | "deprecationNotice"
                | "guardianWarning"
        )
}

/// What the top level holds besides the message's own fields, for [`finish`].
#[derive(Default, Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub late_params: Option<Raw<'a>>,
    pub result: Option<Raw<'a>>,
    pub shape: Shape,
}

/// The top level of a record besides the message: an envelope's members, and [`Parts`].
#[derive(Default)]
pub(crate) struct TopRest<'a> {
    pub parts: Parts<'a>,
    pub ts: Option<i64>,
    pub dir: Option<Str<'a>>,
    pub envelope_msg: Option<Raw<'a>>,
    /// An envelope's `act`: the line was written by swarmtop acting on the session (recording.md).
    pub act: Option<Raw<'a>>,
    pub raw_b64: bool,
}

/// The top level of a record: the message's own members, or an envelope's.
#[derive(Default)]
pub(crate) struct Top<'a> {
    pub message: Message<'a>,
    pub rest: TopRest<'a>,
}

/// The serde path alone, for checking the fast path against it.
#[cfg(test)]
pub(super) fn serde_only(text: &str) -> Result<Top<'_>, serde_json::Error> {
    serde_json::from_str::<Top<'_>>(text)
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
        let mut top = Top::default();
        let mut keys = ShapeKeys::default();
        while let Some(BStr(key)) = map.next_key::<BStr<'de>>()? {
            let (message, rest) = (&mut top.message, &mut top.rest);
            match &*key {
                "method" => message.method = Some(map.next_value::<BStr<'de>>()?.0),
                "params" => match message.method.as_deref() {
                    Some(method) => {
                        let full = wants_full_params(method);
                        message.params = map.next_value_seed(ParamsSeed { full })?;
                    }
                    None => rest.parts.late_params = Some(map.next_value()?),
                },
                "id" => {
                    map.next_value::<IgnoredAny>()?;
                    message.has_id = true;
                }
                "result" => {
                    rest.parts.result = Some(map.next_value()?);
                }
                "error" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "emittedAtMs" => message.emitted_at_ms = map.next_value::<Option<Millis>>()?.map(|m| m.0),
                "swarmtop" => message.swarmtop = Some(map.next_value::<MarkerKind<'de>>()?.0),
                "ts" => rest.ts = map.next_value::<Option<Millis>>()?.map(|m| m.0),
                "dir" => rest.dir = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "msg" => rest.envelope_msg = Some(map.next_value()?),
                "act" => rest.act = Some(map.next_value()?),
                "rawB64" => {
                    map.next_value::<IgnoredAny>()?;
                    rest.raw_b64 = true;
                }
                other => {
                    keys.note(other.as_bytes());
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        top.rest.parts.shape = keys.shape();
        Ok(top)
    }
}

/// A unix-ms time: whole numbers, and floats rounded down (lenient: it only orders windows).
struct Millis(i64);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Millis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time in unix milliseconds")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Millis, E> {
                Ok(Millis(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Millis, E> {
                Ok(Millis(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Millis, E> {
                if v.is_finite() { Ok(Millis(v as i64)) } else { Err(E::custom("time is not finite")) }
            }
        }
        d.deserialize_any(V)
    }
}

/// The value of a `swarmtop` member: a marker kind string; any other value still marks the line.
struct MarkerKind<'a>(Str<'a>);

impl<'de> Deserialize<'de> for MarkerKind<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Any<'a> {
            #[serde(borrow)]
            Text(BStr<'a>),
            Other(IgnoredAny),
        }
        Ok(match Any::deserialize(d)? {
            Any::Text(t) => MarkerKind(t.0),
            Any::Other(_) => MarkerKind(Cow::Borrowed("")),
        })
    }
}

struct ParamsSeed {
    full: bool,
}

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params")
    }

    // Params that are not an object carry no thread: the line is then global or control.
    fn visit_unit<E: de::Error>(self) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Params<'de>, E> {
        Ok(Params::default())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Params<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Params::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let mut p = Params::default();
        while let Some(BStr(key)) = map.next_key::<BStr<'de>>()? {
            if !self.full {
                if key == "threadId" {
                    p.thread_id = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
                continue;
            }
            match &*key {
                "threadId" => p.thread_id = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "turnId" => p.turn_id = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "itemId" => p.item_id = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "delta" => p.delta = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "summaryIndex" => p.summary_index = map.next_value()?,
                "contentIndex" => p.content_index = map.next_value()?,
                "thread" => p.rest_mut().thread = map.next_value()?,
                "turn" => p.rest_mut().turn = map.next_value()?,
                "item" => p.rest_mut().item = map.next_value()?,
                "tokenUsage" => p.rest_mut().token_usage = map.next_value()?,
                "status" => p.rest_mut().status = Some(map.next_value()?),
                "willRetry" => p.rest_mut().will_retry = map.next_value()?,
                "error" => p.rest_mut().error = Some(map.next_value()?),
                "toModel" => p.rest_mut().to_model = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "threadSettings" => {
                    #[derive(Deserialize)]
                    struct Settings<'a> {
                        #[serde(borrow, default, deserialize_with = "opt_str")]
                        model: Option<Str<'a>>,
                    }
                    p.rest_mut().settings_model = map.next_value::<Option<Settings<'de>>>()?.and_then(|s| s.model);
                }
                "message" => p.rest_mut().message = Some(map.next_value()?),
                "name" => p.rest_mut().name = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(p)
    }
}
