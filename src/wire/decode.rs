//! One record (a line without its `\n`) to a [`Line`]: a Codex message, possibly inside a
//! recording envelope (recording.md). Strings borrow from the record unless they hold escapes.
//!
//! The reducer needs a handful of fields; only those are typed, and a wrong type there makes the
//! line malformed (routing.md §3). Everything else is skipped without being built. Fields whose
//! shape differs between methods (`status`, `error`, item contents) stay raw JSON until a consumer
//! that knows the method asks for them.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::methods::Method;

pub type Str<'a> = Cow<'a, str>;

/// Deserializes a string borrowed from the record when it holds no escapes. (serde's own
/// `Cow<str>` impl always allocates outside a derive's bare `#[serde(borrow)]` field.)
pub(crate) struct BStr<'a>(pub Str<'a>);

impl<'de> Deserialize<'de> for BStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

pub(super) fn opt_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Str<'de>>, D::Error> {
    Ok(Option::<BStr<'de>>::deserialize(d)?.map(|b| b.0))
}

pub(super) fn req_str<'de, D: Deserializer<'de>>(d: D) -> Result<Str<'de>, D::Error> {
    Ok(BStr::deserialize(d)?.0)
}

fn opt_vec_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Str<'de>>>, D::Error> {
    Ok(Option::<Vec<BStr<'de>>>::deserialize(d)?.map(|v| v.into_iter().map(|b| b.0).collect()))
}

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

/// Notes the top-level keys that tell a Codex rollout or Claude Code transcript line apart.
#[derive(Default)]
pub(super) struct ShapeKeys {
    payload: bool,
    kind: bool,
    transcript: bool,
}

impl ShapeKeys {
    pub fn note(&mut self, key: &str) {
        match key {
            "payload" => self.payload = true,
            "type" => self.kind = true,
            "uuid" | "sessionId" | "parentUuid" | "leafUuid" | "messageId" => self.transcript = true,
            _ => {}
        }
    }

    pub fn shape(&self) -> Shape {
        match (self.kind, self.payload, self.transcript) {
            (true, true, _) => Shape::CodexRollout,
            (true, _, true) => Shape::ClaudeTranscript,
            _ => Shape::Other,
        }
    }
}

/// What kind of non-Codex record a malformed line looked like (for `input.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    CodexRollout,
    ClaudeTranscript,
    #[default]
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    NotUtf8,
    NotJson(String),
    /// JSON, but a field the reducer reads has the wrong type (`threadId: 7`, `willRetry: "yes"`).
    WrongType(String),
    /// A JSON object, but neither a Codex message, an envelope nor a swarmtop marker.
    NotAMessage(Shape),
    /// An envelope that kept bytes which were not JSON (`rawB64`).
    RawBytes,
    TooLong(usize),
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("not UTF-8"),
            Self::NotJson(e) => write!(f, "not JSON: {e}"),
            Self::WrongType(e) => write!(f, "wrong type: {e}"),
            Self::NotAMessage(Shape::CodexRollout) => f.write_str("a Codex rollout line, not an app-server message"),
            Self::NotAMessage(Shape::ClaudeTranscript) => {
                f.write_str("a Claude Code transcript line, not an app-server message")
            }
            Self::NotAMessage(Shape::Other) => f.write_str("no method, id or swarmtop member"),
            Self::RawBytes => f.write_str("recorded bytes that were not JSON (rawB64)"),
            Self::TooLong(n) => write!(f, "line of {n} bytes is over the length bound"),
        }
    }
}

#[allow(clippy::large_enum_variant)] // Decoded once per line and matched at once: boxing would cost more.
pub enum Decoded<'a> {
    Line(Line<'a>),
    Malformed(Malformed),
}

/// A decoded record: the message and where it came from.
#[derive(Debug)]
pub struct Line<'a> {
    pub dir: Dir,
    /// The envelope's receive time, unix ms.
    pub ts: Option<i64>,
    pub msg: Message<'a>,
    /// The message's own text, verbatim (inside the envelope when there is one).
    pub raw: &'a str,
}

impl Line<'_> {
    /// A slot for [`decode_into`].
    pub fn empty() -> Self {
        Self { dir: Dir::Bare, ts: None, msg: Message::default(), raw: "" }
    }

    /// Its time for the pending window (routing.md §8): the envelope's `ts`, else `emittedAtMs`.
    pub fn time(&self) -> Option<i64> {
        self.ts.or(self.msg.emitted_at_ms)
    }
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
    pub has_result_or_error: bool,
    pub emitted_at_ms: Option<i64>,
    /// `{"swarmtop": "recording" | "live" | "lagged" | "end", …}`: a header or socket marker.
    pub swarmtop: Option<Str<'a>>,
    /// A Claude Code transcript line (its method is `claude/<type>`).
    pub claude: Option<Box<super::claude::ClaudeLine<'a>>>,
    /// A Codex rollout line (its method is `rollout/<type>`).
    pub rollout: Option<Box<super::rollout::RolloutLine<'a>>>,
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
    pub status: Option<&'a RawValue>,
    pub will_retry: Option<bool>,
    pub error: Option<&'a RawValue>,
    pub to_model: Option<Str<'a>>,
    pub settings_model: Option<Str<'a>>,
    pub message: Option<&'a RawValue>,
    pub name: Option<&'a RawValue>,
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
    pub source: Option<&'a RawValue>,
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
    pub error: Option<&'a RawValue>,
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
    #[serde(borrow, default)]
    pub tool: Option<&'a RawValue>,
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
    pub prompt: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub summary: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub command: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub aggregated_output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub exit_code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub changes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub server: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub query: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub agents_states: Option<&'a RawValue>,
}

impl Item<'_> {
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("")
    }

    /// `tool` is a string for collab calls; other item types may use the key otherwise.
    pub fn tool(&self) -> Option<Str<'_>> {
        parse_raw(self.tool)
    }
}

/// Parses an optional raw field as `T`; `None` when absent, null or of another shape.
pub fn parse_raw<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
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

/// One token breakdown. OpenAI semantics: input includes cached and cache-written input, output
/// includes reasoning (wire.md §4).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Breakdown {
    #[serde(default)]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cached_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning_output_tokens: Option<u64>,
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

/// Decodes one record. Never panics; every failure is a [`Malformed`] reason.
pub fn decode(record: &[u8]) -> Decoded<'_> {
    let mut line = Line::empty();
    match decode_into(record, &mut line) {
        Ok(()) => Decoded::Line(line),
        Err(e) => Decoded::Malformed(e),
    }
}

/// [`decode`] into a line the caller owns. A decoded message is some 200 bytes: built in place it
/// is never copied from the scanner to the router (the copies were an eighth of ingest time).
/// On error the slot holds no meaningful line.
pub fn decode_into<'a>(record: &'a [u8], line: &mut Line<'a>) -> Result<(), Malformed> {
    let Ok(text) = std::str::from_utf8(record) else {
        return Err(Malformed::NotUtf8);
    };
    let mut top = TopRest::default();
    parse_top(text, &mut line.msg, &mut top)?;
    if top.raw_b64 {
        return Err(Malformed::RawBytes);
    }
    if let Some(inner) = top.envelope_msg {
        line.dir = match top.dir.as_deref() {
            Some("s2c") => Dir::ServerToClient,
            Some("c2s") => Dir::ClientToServer,
            _ => Dir::In,
        };
        line.ts = top.ts;
        line.raw = inner.get();
        // The envelope's own members are not the message's.
        line.msg = Message::default();
        return decode_message_into(inner.get(), &mut line.msg);
    }
    line.dir = Dir::Bare;
    line.ts = None;
    line.raw = text;
    finish(&mut line.msg, top.parts, text)
}

fn decode_message_into<'a>(text: &'a str, msg: &mut Message<'a>) -> Result<(), Malformed> {
    let mut top = TopRest::default();
    parse_top(text, msg, &mut top)?;
    finish(msg, top.parts, text)
}

pub(super) fn finish<'a>(msg: &mut Message<'a>, parts: Parts<'a>, text: &'a str) -> Result<(), Malformed> {
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
    if msg.method.is_none() && !msg.has_id && msg.swarmtop.is_none() {
        // Lines of the other formats swarmtop reads (wire.md §1, item 4; rollout files) become
        // messages of their own methods.
        let other = match parts.shape {
            Shape::ClaudeTranscript => super::claude::message(text),
            Shape::CodexRollout => super::rollout::message(text),
            Shape::Other => None,
        };
        *msg = other.ok_or(Malformed::NotAMessage(parts.shape))?;
    }
    msg.kind = msg.method.as_deref().map_or(Method::Absent, Method::of);
    Ok(())
}

/// A serde error as a reason: broken JSON, or JSON of the wrong shape.
fn json_error(e: &serde_json::Error) -> Malformed {
    match e.classify() {
        serde_json::error::Category::Data => Malformed::WrongType(e.to_string()),
        _ => Malformed::NotJson(e.to_string()),
    }
}

/// The methods whose params the reducer or the model read beyond `threadId`. For any other method
/// only `threadId` is typed, so an unfamiliar method reusing a key for another shape is still
/// routed (wire.md §1: unknown methods must be tolerated).
pub(super) fn wants_full_params(method: &str) -> bool {
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
pub(super) struct Parts<'a> {
    pub late_params: Option<&'a RawValue>,
    pub result: Option<&'a RawValue>,
    pub shape: Shape,
}

/// The top level of a record besides the message: an envelope's members, and [`Parts`].
#[derive(Default)]
pub(super) struct TopRest<'a> {
    pub parts: Parts<'a>,
    pub ts: Option<i64>,
    pub dir: Option<Str<'a>>,
    pub envelope_msg: Option<&'a RawValue>,
    pub raw_b64: bool,
}

/// The top level of a record: the message's own members, or an envelope's.
#[derive(Default)]
pub(super) struct Top<'a> {
    pub message: Message<'a>,
    pub rest: TopRest<'a>,
}

/// The serde path alone, for checking the fast path against it.
#[cfg(test)]
pub(super) fn serde_only(text: &str) -> Result<Top<'_>, serde_json::Error> {
    serde_json::from_str::<Top<'_>>(text)
}

/// The fast scanner when it can, serde when it cannot (see `scan`). `msg` and `rest` start empty.
fn parse_top<'a>(text: &'a str, msg: &mut Message<'a>, rest: &mut TopRest<'a>) -> Result<(), Malformed> {
    if super::scan::top_into(text, msg, rest).is_some() {
        return Ok(());
    }
    // The scanner may have filled part of the slot before it gave up.
    let top = serde_json::from_str::<Top<'_>>(text).map_err(|e| json_error(&e))?;
    *msg = top.message;
    *rest = top.rest;
    Ok(())
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
                    message.has_result_or_error = true;
                }
                "error" => {
                    map.next_value::<IgnoredAny>()?;
                    message.has_result_or_error = true;
                }
                "emittedAtMs" => message.emitted_at_ms = map.next_value::<Option<Millis>>()?.map(|m| m.0),
                "swarmtop" => message.swarmtop = Some(map.next_value::<MarkerKind<'de>>()?.0),
                "ts" => rest.ts = map.next_value::<Option<Millis>>()?.map(|m| m.0),
                "dir" => rest.dir = map.next_value::<Option<BStr<'de>>>()?.map(|b| b.0),
                "msg" => rest.envelope_msg = Some(map.next_value()?),
                "rawB64" => {
                    map.next_value::<IgnoredAny>()?;
                    rest.raw_b64 = true;
                }
                other => {
                    keys.note(other);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Line<'_> {
        match decode(s.as_bytes()) {
            Decoded::Line(l) => l,
            Decoded::Malformed(m) => panic!("malformed: {m}"),
        }
    }

    fn malformed(s: &[u8]) -> Malformed {
        match decode(s) {
            Decoded::Line(l) => panic!("decoded: {l:?}"),
            Decoded::Malformed(m) => m,
        }
    }

    #[test]
    fn notification_borrows_its_strings() {
        let l = line(
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t1","turnId":"u","itemId":"m","delta":"hi"},"emittedAtMs":5}"#,
        );
        assert_eq!(l.msg.method(), Some("item/agentMessage/delta"));
        assert_eq!(l.msg.thread_id(), Some("t1"));
        assert!(matches!(l.msg.params.delta, Some(Cow::Borrowed("hi"))));
        assert_eq!(l.time(), Some(5));
        assert_eq!(l.dir, Dir::Bare);
    }

    #[test]
    fn params_before_method_are_still_read() {
        let l = line(r#"{"params":{"threadId":"t1","willRetry":true},"method":"error"}"#);
        assert_eq!(l.msg.thread_id(), Some("t1"));
        assert_eq!(l.msg.params.rest().will_retry, Some(true));
    }

    #[test]
    fn envelope_unwraps_verbatim() {
        let inner = r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1","rootTurnId":"u1"}}}"#;
        let rec = format!(r#"{{"ts":42,"dir":"s2c","msg":{inner}}}"#);
        let l = line(&rec);
        assert_eq!(l.dir, Dir::ServerToClient);
        assert_eq!(l.ts, Some(42));
        assert_eq!(l.raw, inner);
        assert_eq!(l.msg.params.rest().turn.as_ref().unwrap().root_turn_id.as_deref(), Some("u1"));
    }

    #[test]
    fn unknown_method_reusing_a_key_is_not_malformed() {
        let l = line(r#"{"method":"thread/realtime/item/completed","params":{"threadId":"t","item":42,"status":"x"}}"#);
        assert_eq!(l.msg.thread_id(), Some("t"));
    }

    #[test]
    fn string_status_on_other_methods_is_fine() {
        line(r#"{"method":"remoteControl/status/changed","params":{"status":"disabled"}}"#);
    }

    #[test]
    fn wrong_types_where_needed_are_malformed() {
        malformed(br#"{"method":"error","params":{"threadId":"t","willRetry":"yes"}}"#);
        malformed(br#"{"method":"turn/started","params":{"threadId":7}}"#);
        malformed(br#"{"method":"item/completed","params":{"threadId":"t","item":{"type":"collabAgentToolCall","receiverThreadIds":"c"}}}"#);
    }

    #[test]
    fn malformed_kinds() {
        assert_eq!(malformed(b"\xff\xfe"), Malformed::NotUtf8);
        assert!(matches!(malformed(b"{\"method\":"), Malformed::NotJson(_)));
        assert!(matches!(malformed(b"[1,2]"), Malformed::WrongType(_)), "JSON, but not an object");
        assert!(matches!(malformed(br#"{"method":"turn/started","params":{"threadId":7}}"#), Malformed::WrongType(_)));
        assert_eq!(malformed(br#"{"foo":1}"#), Malformed::NotAMessage(Shape::Other));
        // A rollout line is read as one; one whose type is not a word is not.
        assert_eq!(
            line(r#"{"timestamp":"x","type":"event_msg","payload":{}}"#).msg.method(),
            Some("rollout/event_msg")
        );
        assert_eq!(
            malformed(br#"{"timestamp":"x","type":5,"payload":{}}"#),
            Malformed::NotAMessage(Shape::CodexRollout)
        );
        assert_eq!(malformed(br#"{"ts":1,"dir":"in","rawB64":"AAA="}"#), Malformed::RawBytes);
    }

    #[test]
    fn responses_and_markers() {
        let l = line(
            r#"{"id":2,"result":{"thread":{"id":"t","parentThreadId":null},"model":"gpt-5.5","modelProvider":"openai"}}"#,
        );
        let r = l.msg.result.unwrap();
        assert_eq!(r.thread.unwrap().id, "t");
        assert_eq!(r.model_provider.as_deref(), Some("openai"));
        let l = line(r#"{"swarmtop":"recording","version":1}"#);
        assert_eq!(l.msg.swarmtop.as_deref(), Some("recording"));
        let l = line(r#"{"id":3,"result":[]}"#);
        assert!(l.msg.result.is_none() && l.msg.has_id);
    }

    #[test]
    fn spawn_source_gives_the_parent() {
        let l = line(
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_path":"/root/a","agent_nickname":"Kant"}}}}}}"#,
        );
        let t = l.msg.params.rest().thread.as_ref().unwrap();
        assert_eq!(t.parent().as_deref(), Some("p"));
        assert_eq!(t.spawn().unwrap().agent_nickname.as_deref(), Some("Kant"));
    }
}
