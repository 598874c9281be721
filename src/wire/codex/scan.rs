//! The fast path of reading a Codex message: one pass over a record with the [`Cursor`], as a
//! table per object of the members the reducer reads; every value is checked against the
//! grammar on the way ([`Cursor::value`]), so what it accepts serde accepts too.
//!
//! It is deliberately partial. Anything unusual — a typed number that is not a plain integer, a
//! member given twice where a derived struct refuses it, a struct given as an array, any syntax
//! error — makes it give up (`None`), and serde decides instead ([`parse_top`]). So it never
//! accepts a line serde would reject, and it never has to reproduce serde's error messages. The
//! nested objects the reducer reads in depth (`item`, `thread`, `turn`, `tokenUsage`, a
//! response's `result`) are read here too, as their derived types read them: on real traffic they
//! are a third of the bytes, and a second pass by serde cost more than the scan itself. Only
//! `threadSettings`, rare, is parsed by serde from its slice.

use std::borrow::Cow;

use super::message::{
    Item, Message, Params, ResultBody, ThreadInfo, TokenUsage, Top, TopRest, TurnInfo, json_error, wants_full_params,
};
use crate::wire::fact::Breakdown;
use crate::wire::json::{Cursor, Raw, Scan, Str};
use crate::wire::malformed::{Malformed, ShapeKeys};

/// The top level of a record, as [`Top`]: the message's own members into `msg`, the rest into
/// `rest`; read by this scan when it can, by serde when it cannot. Both start empty.
pub(crate) fn parse_top<'a>(text: &'a str, msg: &mut Message<'a>, rest: &mut TopRest<'a>) -> Result<(), Malformed> {
    if top_into(text, msg, rest).is_some() {
        return Ok(());
    }
    // The scan may have filled part of the slot before it gave up.
    let top = serde_json::from_str::<Top<'_>>(text).map_err(|e| json_error(&e))?;
    *msg = top.message;
    *rest = top.rest;
    Ok(())
}

/// A raw value as a string, when it is one: unescaped by the cursor, by serde where the cursor
/// gives up. Item texts hold escapes (`\n`, `\"`) more often than not, and serde's `Cow<str>`
/// always copies them out of its scratch buffer once more.
pub(super) fn string_of(raw: Raw<'_>) -> Option<Str<'_>> {
    if !raw.get().starts_with('"') {
        return None;
    }
    let mut c = Cursor::new(raw.get());
    c.string().filter(|_| c.end().is_some()).or_else(|| raw.parse())
}

/// A raw array of strings as serde reads a `Vec<Str>` (by serde where the cursor gives up): a
/// reasoning item's summary and content, read once per completed item.
pub(super) fn strings_of(raw: Raw<'_>) -> Option<Vec<Str<'_>>> {
    let mut c = Cursor::new(raw.get());
    match c.opt_strs() {
        Some(Some(v)) if c.end().is_some() => Some(v),
        _ => raw.parse(),
    }
}

/// The `text` of each part of a raw array of objects, as serde reads a `Vec` of a derived
/// struct whose one field is `text: Option<Str>` (a user message's content): `None` when it is
/// not such an array.
pub(super) fn texts_of(raw: Raw<'_>) -> Option<Vec<Option<Str<'_>>>> {
    #[derive(serde::Deserialize)]
    struct Part<'a> {
        #[serde(borrow)]
        text: Option<Str<'a>>,
    }
    let mut c = Cursor::new(raw.get());
    let mut parts = Vec::new();
    let read = c.elements(|c| {
        // A part given as an array (by position) is left to serde.
        if c.peek()? != b'{' {
            return None;
        }
        let mut text = None;
        c.fields(|f, key| if key == b"text" { f.set(0, &mut text) } else { f.value() })?;
        parts.push(text);
        Some(())
    });
    match read.and_then(|()| c.end()) {
        Some(()) => Some(parts),
        None => raw.parse::<Vec<Part<'_>>>().map(|parts| parts.into_iter().map(|p| p.text).collect()),
    }
}

/// `params.tokenUsage` as the derived [`TokenUsage`] reads it. Parsed here rather than checked
/// here and parsed again by serde: one such line follows every model response.
fn token_usage(c: &mut Cursor<'_>) -> Scan<Option<TokenUsage>> {
    if !c.opt_object()? {
        return Some(None);
    }
    let mut u = TokenUsage::default();
    c.fields(|f, key| match key {
        b"total" => breakdown(f.once(0)?).map(|v| u.total = v),
        b"last" => breakdown(f.once(1)?).map(|v| u.last = v),
        b"modelContextWindow" => f.set(2, &mut u.model_context_window),
        _ => f.value(),
    })?;
    Some(Some(u))
}

fn breakdown(c: &mut Cursor<'_>) -> Scan<Option<Breakdown>> {
    if !c.opt_object()? {
        return Some(None);
    }
    let at = c.clone();
    if let Some(b) = breakdown_as_written(c) {
        return Some(Some(b));
    }
    *c = at;
    let mut b = Breakdown::default();
    c.fields(|f, key| match key {
        b"totalTokens" => f.set(0, &mut b.total_tokens),
        b"inputTokens" => f.set(1, &mut b.input_tokens),
        b"cachedInputTokens" => f.set(2, &mut b.cached_input_tokens),
        b"cacheWriteInputTokens" => f.set(3, &mut b.cache_write_input_tokens),
        b"outputTokens" => f.set(4, &mut b.output_tokens),
        b"reasoningOutputTokens" => f.set(5, &mut b.reasoning_output_tokens),
        _ => f.value(),
    })?;
    Some(Some(b))
}

/// A breakdown with its six figures in the order Codex writes them (two per usage line), read by
/// their literal names; any other shape gives up, for the table of [`breakdown`]. What it reads
/// agrees with that table.
fn breakdown_as_written(c: &mut Cursor<'_>) -> Scan<Breakdown> {
    c.literal(b"{\"totalTokens\":")?;
    let total_tokens = c.opt_u64()?;
    c.literal(b",\"inputTokens\":")?;
    let input_tokens = c.opt_u64()?;
    c.literal(b",\"cachedInputTokens\":")?;
    let cached_input_tokens = c.opt_u64()?;
    c.literal(b",\"cacheWriteInputTokens\":")?;
    let cache_write_input_tokens = c.opt_u64()?;
    c.literal(b",\"outputTokens\":")?;
    let output_tokens = c.opt_u64()?;
    c.literal(b",\"reasoningOutputTokens\":")?;
    let reasoning_output_tokens = c.opt_u64()?;
    c.literal(b"}")?;
    Some(Breakdown {
        total_tokens,
        input_tokens,
        cached_input_tokens,
        cache_write_input_tokens,
        output_tokens,
        reasoning_output_tokens,
        ..Breakdown::default()
    })
}

/// `params.item` as the derived [`Item`] reads it: strings typed, display fields raw. Two of
/// every dozen lines carry an item (`item/started`, `item/completed`).
fn item<'a>(c: &mut Cursor<'a>) -> Scan<Option<Item<'a>>> {
    if !c.opt_object()? {
        return Some(None);
    }
    let mut it = Item::default();
    c.fields(|f, key| match key {
        b"type" => f.set(0, &mut it.kind),
        b"id" => f.set(1, &mut it.id),
        b"status" => f.set(2, &mut it.status),
        b"model" => f.set(3, &mut it.model),
        b"kind" => f.set(4, &mut it.activity),
        b"agentThreadId" => f.set(5, &mut it.agent_thread_id),
        b"agentPath" => f.set(6, &mut it.agent_path),
        b"receiverThreadIds" => f.set(7, &mut it.receiver_thread_ids),
        b"tool" => f.set(8, &mut it.tool),
        b"prompt" => f.set(9, &mut it.prompt),
        b"text" => f.set(10, &mut it.text),
        b"summary" => f.set(11, &mut it.summary),
        b"content" => f.set(12, &mut it.content),
        b"command" => f.set(13, &mut it.command),
        b"aggregatedOutput" => f.set(14, &mut it.aggregated_output),
        b"exitCode" => f.set(15, &mut it.exit_code),
        b"changes" => f.set(16, &mut it.changes),
        b"server" => f.set(17, &mut it.server),
        b"query" => f.set(18, &mut it.query),
        b"error" => f.set(19, &mut it.error),
        b"agentsStates" => f.set(20, &mut it.agents_states),
        _ => f.value(),
    })?;
    Some(Some(it))
}

/// A thread's description (`params.thread`, `result.thread`) as the derived [`ThreadInfo`] reads
/// it: every `thread/start` response and `thread/started` carries one of some 1 KiB, which serde
/// would otherwise walk a second time.
fn thread_info<'a>(c: &mut Cursor<'a>) -> Scan<Option<ThreadInfo<'a>>> {
    if !c.opt_object()? {
        return Some(None);
    }
    let mut t = ThreadInfo::default();
    let mut has_id = false;
    c.fields(|f, key| match key {
        // Required, and a string (serde refuses the line otherwise).
        b"id" => {
            has_id = true;
            f.set(0, &mut t.id)
        }
        b"source" => f.set(1, &mut t.source),
        b"parentThreadId" => f.set(2, &mut t.parent_thread_id),
        b"model" => f.set(3, &mut t.model),
        b"agentNickname" => f.set(4, &mut t.agent_nickname),
        b"agentRole" => f.set(5, &mut t.agent_role),
        _ => f.value(),
    })?;
    // No `id`: serde names the missing field.
    has_id.then_some(Some(t))
}

/// `params.turn` as the derived [`TurnInfo`] reads it (`turn/completed` carries the turn's items,
/// stepped over here once).
fn turn_info<'a>(c: &mut Cursor<'a>) -> Scan<Option<TurnInfo<'a>>> {
    if !c.opt_object()? {
        return Some(None);
    }
    let mut t = TurnInfo::default();
    c.fields(|f, key| match key {
        b"id" => f.set(0, &mut t.id),
        b"rootTurnId" => f.set(1, &mut t.root_turn_id),
        b"status" => f.set(2, &mut t.status),
        b"error" => f.set(3, &mut t.error),
        _ => f.value(),
    })?;
    Some(Some(t))
}

/// A response's `result` object as the derived [`ResultBody`] reads it.
fn result_body<'a>(c: &mut Cursor<'a>) -> Scan<ResultBody<'a>> {
    let mut r = ResultBody::default();
    c.fields(|f, key| match key {
        b"thread" => thread_info(f.once(0)?).map(|v| r.thread = v),
        b"model" => f.set(1, &mut r.model),
        b"modelProvider" => f.set(2, &mut r.model_provider),
        _ => f.value(),
    })?;
    Some(r)
}

/// `threadSettings`, rare, by serde from its checked text.
fn settings_model<'a>(c: &mut Cursor<'a>) -> Scan<Option<Str<'a>>> {
    #[derive(serde::Deserialize)]
    struct Settings<'a> {
        #[serde(borrow, default, deserialize_with = "crate::wire::json::opt_str")]
        model: Option<Str<'a>>,
    }
    let settings: Option<Settings<'a>> = serde_json::from_str(c.value()?).ok()?;
    Some(settings.and_then(|s| s.model))
}

/// Params into `p` (in place, see `decode_into`), replacing what it held. Any member may come
/// again (serde's hand-written visitor keeps the last).
fn params<'a>(c: &mut Cursor<'a>, full: bool, p: &mut Params<'a>) -> Scan<()> {
    *p = Params::default();
    match c.peek()? {
        b'{' => {}
        b'n' => return c.literal(b"null"),
        // Arrays and scalars carry no thread (see ParamsSeed).
        _ => return c.value().map(drop),
    }
    c.fields(|f, key| {
        if !full {
            return if key == b"threadId" { f.cursor().opt_str().map(|v| p.thread_id = v) } else { f.value() };
        }
        let c = f.cursor();
        match key {
            b"threadId" => p.thread_id = c.opt_str()?,
            b"turnId" => p.turn_id = c.opt_str()?,
            b"itemId" => p.item_id = c.opt_str()?,
            b"delta" => p.delta = c.opt_str()?,
            b"summaryIndex" => p.summary_index = c.opt_i64()?,
            b"contentIndex" => p.content_index = c.opt_i64()?,
            b"willRetry" => p.rest_mut().will_retry = c.opt_bool()?,
            b"toModel" => p.rest_mut().to_model = c.opt_str()?,
            b"thread" => p.rest_mut().thread = thread_info(c)?,
            b"turn" => p.rest_mut().turn = turn_info(c)?,
            b"item" => p.rest_mut().item = item(c)?,
            b"tokenUsage" => p.rest_mut().token_usage = token_usage(c)?,
            b"threadSettings" => p.rest_mut().settings_model = settings_model(c)?,
            b"status" => p.rest_mut().status = Some(Raw::validated(c.value()?)),
            b"error" => p.rest_mut().error = Some(Raw::validated(c.value()?)),
            b"message" => p.rest_mut().message = Some(Raw::validated(c.value()?)),
            b"name" => p.rest_mut().name = Some(Raw::validated(c.value()?)),
            _ => {
                c.value()?;
            }
        }
        Some(())
    })
}

/// A stream delta in the exact shape Codex writes it (seven lines in ten):
/// `{"method":"item/…","params":{"threadId":…,"turnId":…,"itemId":…,"delta":…[,"summaryIndex":…|
/// ,"contentIndex":…]},"emittedAtMs":…}`. Its member names are compared as the literals they
/// always are, in their order, instead of each being scanned and dispatched on. Any other shape
/// gives up and leaves `msg` as it was, for the general scan; what is read agrees with it.
fn delta_into<'a>(text: &'a str, msg: &mut Message<'a>) -> Scan<()> {
    if !text.starts_with("{\"method\":\"item/") {
        return None;
    }
    let mut c = Cursor::new(text);
    c.literal(b"{\"method\":")?;
    let method = c.string()?;
    c.literal(b",\"params\":{\"threadId\":")?;
    let thread_id = c.string()?;
    c.literal(b",\"turnId\":")?;
    let turn_id = c.string()?;
    c.literal(b",\"itemId\":")?;
    let item_id = c.string()?;
    c.literal(b",\"delta\":")?;
    let delta = c.string()?;
    let (mut summary_index, mut content_index) = (None, None);
    if c.literal(b",\"summaryIndex\":").is_some() {
        summary_index = c.opt_i64()?;
    } else if c.literal(b",\"contentIndex\":").is_some() {
        content_index = c.opt_i64()?;
    }
    c.literal(b"},\"emittedAtMs\":")?;
    let emitted_at_ms = c.opt_i64()?;
    c.literal(b"}")?;
    c.end()?;
    msg.method = Some(method);
    msg.emitted_at_ms = emitted_at_ms;
    let p = &mut msg.params;
    p.thread_id = Some(thread_id);
    p.turn_id = Some(turn_id);
    p.item_id = Some(item_id);
    p.delta = Some(delta);
    p.summary_index = summary_index;
    p.content_index = content_index;
    Some(())
}

/// Any other notification in the shape Codex writes it, `{"method":…,"params":…[,
/// "emittedAtMs":…]}`: its member names compared as literals, its params read as usual.
/// Any other shape gives up, with `msg` back as it was.
fn notification_into<'a>(text: &'a str, msg: &mut Message<'a>) -> Scan<()> {
    if !text.starts_with("{\"method\":") {
        return None;
    }
    let mut c = Cursor::new(text);
    let read = (|| {
        c.literal(b"{\"method\":")?;
        let method = c.string()?;
        c.literal(b",\"params\":")?;
        params(&mut c, wants_full_params(&method), &mut msg.params)?;
        msg.method = Some(method);
        // Servers before `emittedAtMs` write none.
        if c.literal(b",\"emittedAtMs\":").is_some() {
            msg.emitted_at_ms = c.opt_i64()?;
        }
        c.literal(b"}")?;
        c.end()
    })();
    if read.is_none() {
        *msg = Message::default();
    }
    read
}

/// The top level of a record, as [`Top`]: the message's own members into `msg`, the rest into
/// `top`. Both start empty.
fn top_into<'a>(text: &'a str, msg: &mut Message<'a>, top: &mut TopRest<'a>) -> Scan<()> {
    if delta_into(text, msg).is_some() || notification_into(text, msg).is_some() {
        top.parts.shape = ShapeKeys::default().shape();
        return Some(());
    }
    let mut c = Cursor::new(text);
    let mut late_params: Option<&str> = None;
    let mut keys = ShapeKeys::default();
    c.fields(|f, key| {
        let c = f.cursor();
        match key {
            b"method" => msg.method = Some(c.string()?),
            b"params" => match msg.method.as_deref() {
                Some(method) => params(c, wants_full_params(method), &mut msg.params)?,
                None => late_params = Some(c.value()?),
            },
            b"id" => {
                c.value()?;
                msg.has_id = true;
            }
            // Only an object result carries what the reducer reads (the last one, as serde keeps it).
            b"result" => {
                msg.result =
                    if c.peek()? == b'{' { Some(Box::new(result_body(c)?)) } else { c.value().map(|_| None)? };
            }
            b"error" => {
                c.value()?;
            }
            b"emittedAtMs" => msg.emitted_at_ms = c.opt_i64()?,
            b"swarmtop" => msg.swarmtop = Some(marker(c)?),
            b"ts" => top.ts = c.opt_i64()?,
            b"dir" => top.dir = c.opt_str()?,
            b"msg" => top.envelope_msg = Some(Raw::validated(c.value()?)),
            b"act" => top.act = Some(Raw::validated(c.value()?)),
            b"rawB64" => {
                c.value()?;
                top.raw_b64 = true;
            }
            other => {
                keys.note(other);
                c.value()?;
            }
        }
        Some(())
    })?;
    c.end()?;
    if let Some(text) = late_params {
        let full = msg.method.as_deref().is_some_and(wants_full_params);
        params(&mut Cursor::new(text), full, &mut msg.params)?;
    }
    top.parts.shape = keys.shape();
    Some(())
}

/// A `swarmtop` member's marker kind; any other value still marks the line.
fn marker<'a>(c: &mut Cursor<'a>) -> Scan<Str<'a>> {
    if c.peek()? == b'"' {
        c.string()
    } else {
        c.value()?;
        Some(Cow::Borrowed(""))
    }
}

/// [`top_into`] by value, for the tests.
#[cfg(test)]
fn top(text: &str) -> Scan<super::message::Top<'_>> {
    let mut t = super::message::Top::default();
    top_into(text, &mut t.message, &mut t.rest)?;
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_lines_take_the_fast_path() {
        let lines = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a \n b","summaryIndex":0},"emittedAtMs":1795987208996}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0},"last":null,"modelContextWindow":258400}},"emittedAtMs":1}"#,
            r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"x","summary":[],"content":[],"phase":null},"threadId":"t","turnId":"u","completedAtMs":5},"emittedAtMs":5}"#,
            r#"{"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex","primary":null}},"emittedAtMs":5}"#,
            r#"{"id":2,"result":{"thread":{"id":"t"},"model":"gpt-5.5","modelProvider":"openai"}}"#,
        ];
        for l in lines {
            assert!(top(l).is_some(), "fell back: {l}");
        }
    }
}

#[cfg(test)]
mod agreement {
    use proptest::prelude::*;

    use super::super::message::{Top, finish, is_message, serde_only};
    use super::*;
    use crate::wire::malformed::Malformed;

    /// What the reducer reads of a line, for comparing the two paths.
    fn summary(t: Top<'_>) -> String {
        let Top { message: mut m, rest: t } = t;
        let envelope = format!("{:?}|{:?}|{:?}|{}", t.ts, t.dir, t.envelope_msg.map(Raw::get), t.raw_b64);
        if let Err(e) = finish(&mut m, t.parts) {
            return format!("malformed {e:?}|{envelope}");
        }
        if !is_message(&m) {
            return format!("malformed {:?}|{envelope}", Malformed::NotAMessage(t.parts.shape));
        }
        let p = &m.params;
        let r = p.rest();
        format!(
            "{:?}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{envelope}",
            m.method,
            m.has_id,
            m.emitted_at_ms,
            m.swarmtop,
            p.thread_id,
            p.turn_id,
            p.item_id,
            p.delta,
            p.summary_index,
            r.will_retry,
            r.item,
            r.token_usage,
            r.thread,
            r.turn,
            r.status.map(Raw::get),
            r.error.map(Raw::get),
            r.settings_model,
            m.result,
        )
    }

    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("7".to_owned()),
            Just("-1.5e3".to_owned()),
            Just("1795987208996".to_owned()),
            Just("\"t1\"".to_owned()),
            Just("\"a\\nb\\\"c\"".to_owned()),
            Just("\"\\u00e9\"".to_owned()),
            Just("\"x\\q\"".to_owned()),
            Just("01".to_owned()),
            Just("-0".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("-9223372036854775808".to_owned()),
            Just("9223372036854775808".to_owned()),
            Just("\"caf\u{e9}\"".to_owned()),
            Just("{\"id\":\"u\",\"rootTurnId\":\"u\",\"status\":\"completed\",\"items\":[{\"type\":\"x\"}],\"error\":null}".to_owned()),
            Just("{\"id\":\"c\",\"parentThreadId\":\"p\",\"source\":{\"subAgent\":{}},\"agentNickname\":\"Ada\",\"turns\":[]}".to_owned()),
        ];
        crate::wire::json::arbitrary::nested(leaf, key)
    }

    /// A value for one of a delta's slots: mostly of the kind it holds, sometimes anything.
    fn slot(usual: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop_oneof![9 => proptest::sample::select(usual).prop_map(str::to_owned), 1 => value()]
    }

    const TEXTS: &[&str] =
        &["\"019a0000-000f-7101-a963-a7441a91b9f1\"", "\"a \\n \\\"b\\\" \\\\ \\t\"", "\"caf\u{e9} \\/\"", "\"\""];
    const NUMBERS: &[&str] = &["0", "1795987208996", "-3", "null"];

    fn key() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("method"),
            Just("params"),
            Just("id"),
            Just("result"),
            Just("error"),
            Just("emittedAtMs"),
            Just("threadId"),
            Just("turnId"),
            Just("itemId"),
            Just("delta"),
            Just("summaryIndex"),
            Just("willRetry"),
            Just("item"),
            Just("thread"),
            Just("status"),
            Just("type"),
            Just("receiverThreadIds"),
            Just("kind"),
            Just("agentThreadId"),
            Just("text"),
            Just("tool"),
            Just("tokenUsage"),
            Just("total"),
            Just("totalTokens"),
            Just("modelContextWindow"),
            Just("ts"),
            Just("dir"),
            Just("msg"),
            Just("swarmtop"),
            Just("turn"),
            Just("rootTurnId"),
            Just("parentThreadId"),
            Just("source"),
            Just("model"),
            Just("modelProvider"),
            Just("agentNickname"),
            Just("agentRole"),
            Just("items"),
            Just("other"),
        ]
    }

    fn method() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\"item/agentMessage/delta\""),
            Just("\"item/completed\""),
            Just("\"thread/status/changed\""),
            Just("\"error\""),
            Just("\"brand/new\""),
            Just("5"),
        ]
        .prop_map(str::to_owned)
    }

    #[test]
    fn strings_of_raw_values_read_as_serde_reads_them() {
        let texts =
            [r#""plain""#, r#""a\nb \"c\" \\ d\t\/""#, r#""caf\u00e9 \ud83e\udd80""#, "\"\"", "7", "null", r#"["a"]"#];
        for text in texts {
            let raw = Raw::validated(text);
            assert_eq!(string_of(raw), raw.parse::<Str<'_>>(), "{text}");
        }
    }

    /// Arrays read by lowering (summaries, content parts) as serde reads them.
    #[test]
    fn arrays_of_raw_values_read_as_serde_reads_them() {
        #[derive(serde::Deserialize)]
        struct Part<'a> {
            #[serde(borrow)]
            text: Option<Str<'a>>,
        }
        let texts = [
            r#"["a","b\nc"]"#,
            "[]",
            r#"[ "x" , "caf\u00e9" ]"#,
            r#"["a",1]"#,
            "null",
            "7",
            r#""s""#,
            r#"[{"type":"text","text":"PARENT \"TASK\"","text_elements":[]},{"type":"image"}]"#,
            r#"[{"text":null},{"text":"a","text":"b"}]"#,
            r#"[["positional"]]"#,
            r#"[{"text":5}]"#,
            "[null]",
        ];
        for text in texts {
            let raw = Raw::validated(text);
            assert_eq!(strings_of(raw), raw.parse::<Vec<Str<'_>>>(), "{text}");
            let serde = raw.parse::<Vec<Part<'_>>>().map(|v| v.into_iter().map(|p| p.text).collect::<Vec<_>>());
            assert_eq!(texts_of(raw), serde, "{text}");
        }
    }

    /// The typed nested objects the scanner reads itself, on lines shaped like real ones.
    #[test]
    fn items_and_token_usage_agree_with_serde() {
        let lines = [
            r#"{"method":"item/completed","params":{"item":{"type":"collabAgentToolCall","id":"call_1","tool":"spawnAgent","status":"completed","senderThreadId":"p","receiverThreadIds":["c1","c\"2"],"prompt":"do \n it","model":"gpt-5.6-luna","agentsStates":{}},"threadId":"p","turnId":"u"},"emittedAtMs":5}"#,
            r#"{"method":"item/started","params":{"item":{"type":"subAgentActivity","id":"a","kind":"started","agentThreadId":"c","agentPath":"/root/x","text":null,"exitCode":0},"threadId":"p"}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","tokenUsage":{"total":{"totalTokens":10,"inputTokens":9,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":1,"reasoningOutputTokens":0,"extra":[1]},"last":null,"modelContextWindow":258400}}}"#,
            r#"{"method":"item/completed","params":{"item":null,"threadId":"p"}}"#,
            r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","rootTurnId":"r","items":[{"type":"agentMessage","id":"m","text":"a\"b"}],"status":"failed","error":{"message":"x"},"durationMs":5}}}"#,
            r#"{"method":"turn/started","params":{"threadId":"t","turn":null}}"#,
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p"}}},"parentThreadId":null,"model":"gpt-5.5","agentNickname":"Kant","agentRole":null,"turns":[]}}}"#,
            r#"{"id":4,"result":{"thread":{"id":"t","status":{"type":"idle"},"turns":[]},"model":"gpt-5.5","modelProvider":"openai","sandbox":{"type":"x"}}}"#,
            r#"{"id":5,"result":{"thread":null,"model":null}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":0,"outputTokens":9999999999999999999},"modelContextWindow":18446744073709551615}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":1580,"inputTokens":1500,"cachedInputTokens":0,"cacheWriteInputTokens":null,"outputTokens":80,"reasoningOutputTokens":32},"last":{"totalTokens":7,"inputTokens":1,"cachedInputTokens":2,"cacheWriteInputTokens":3,"outputTokens":4,"reasoningOutputTokens":5,"x":1},"modelContextWindow":258400}},"emittedAtMs":1}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":1,"totalTokens":2,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0},"last":{ "totalTokens":7,"inputTokens":1,"cachedInputTokens":2,"cacheWriteInputTokens":3,"outputTokens":4,"reasoningOutputTokens":5}}}}"#,
            r#"{"id":6,"result":{"model":"a"},"result":7}"#,
            r#"{"id":6,"result":3,"result":{"model":"b"}}"#,
        ];
        for l in lines {
            let fast = top(l).unwrap_or_else(|| panic!("fell back: {l}"));
            assert_eq!(summary(fast), summary(serde_only(l).unwrap()), "{l}");
        }
        // What serde refuses, the scanner leaves to serde.
        for l in [
            r#"{"method":"item/completed","params":{"item":{"id":"a","id":"b"}}}"#,
            r#"{"method":"item/completed","params":{"item":["agentMessage","a"]}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1.0}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":-1}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0.5}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0,"totalTokens":2}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":-0}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":18446744073709551616}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":1e3}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":07}}}}"#,
            // serde reads `-0` as a float.
            r#"{"method":"item/agentMessage/delta","params":{"summaryIndex":-0}}"#,
            r#"{"method":"thread/started","params":{"thread":{"parentThreadId":"p"}}}"#,
            r#"{"method":"thread/started","params":{"thread":{"id":null}}}"#,
            r#"{"method":"turn/completed","params":{"turn":{"id":"a","id":"b"}}}"#,
            r#"{"method":"turn/completed","params":{"turn":{"status":{"type":"x"}}}}"#,
            r#"{"id":4,"result":{"model":"a","model":"b"}}"#,
            r#"{"id":4,"result":{"thread":{"id":"t","agentRole":5}}}"#,
        ] {
            assert!(top(l).is_none(), "fast path took: {l}");
        }
    }

    /// Notifications in the shape Codex writes them, and near it, agree with serde; a line the
    /// literal path leaves is read whole by the general scan.
    #[test]
    fn notification_shaped_lines_agree_with_serde() {
        let lines = [
            r#"{"method":"thread/status/changed","params":{"threadId":"t","status":{"type":"idle"}},"emittedAtMs":5}"#,
            r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u","rootTurnId":"u"}}}"#,
            r#"{"method":"account/rateLimits/updated","params":null,"emittedAtMs":null}"#,
            r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"a\nb"},"threadId":"t"},"emittedAtMs":1} "#,
            r#"{"method":"x\"y","params":{"threadId":"t"}}"#,
            r#"{"method":"error","params":{"threadId":"t","willRetry":true},"emittedAtMs":1,"id":4}"#,
            r#"{"method":"error","params":{"threadId":"t"},"emittedAtMs":1.5}"#,
            r#"{"method":"error","params":{"threadId":"t"},"ts":1}"#,
            r#"{"method":"turn/started","params":{"threadId":"t"},"params":{"threadId":"u"}}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            let taken = notification_into(l, &mut Message::default()).is_some();
            assert_eq!(taken, i < 5, "{l}");
            // The fast path gives up on a fraction, as serde's typed read refuses it.
            if let Some(fast) = top(l) {
                assert_eq!(summary(fast), summary(serde_only(l).unwrap()), "{l}");
            }
        }
        let mut m = Message::default();
        assert!(notification_into(lines[5], &mut m).is_none());
        assert!(m.method.is_none() && m.params.thread_id.is_none(), "left as it was");
    }

    /// Lines in the delta shape, and near it: what the delta path reads is what serde reads.
    #[test]
    fn delta_shaped_lines_agree_with_serde() {
        let taken = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a \n \"b\""},"emittedAtMs":1795987208996}"#,
            r#"{"method":"item/reasoning/summaryTextDelta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"x","summaryIndex":2},"emittedAtMs":5} "#,
            r#"{"method":"item/commandExecution/outputDelta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"","contentIndex":0},"emittedAtMs":null}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"caf\u00e9 \ud83e\udd80"},"emittedAtMs":1}"#,
        ];
        for l in taken {
            let mut m = Message::default();
            assert!(delta_into(l, &mut m).is_some(), "not taken: {l}");
            assert_eq!(summary(top(l).unwrap()), summary(serde_only(l).unwrap()), "{l}");
        }
        let left = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":null},"emittedAtMs":1}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a","extra":1},"emittedAtMs":1}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1,"id":3}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1.5}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}x"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}"#,
            r#"{"method":"thread/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}"#,
        ];
        for l in left {
            let mut m = Message::default();
            assert!(delta_into(l, &mut m).is_none(), "taken: {l}");
            assert!(m.method.is_none() && m.params.thread_id.is_none(), "written to: {l}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The delta path, on delta-shaped lines with any values in its slots.
        #[test]
        fn delta_path_agrees_with_serde(
            m in slot(&["\"item/agentMessage/delta\"", "\"item/reasoning/summaryTextDelta\"", "\"item/x\\\"y\""]),
            ids in proptest::collection::vec(slot(TEXTS), 4),
            index in prop_oneof![Just(""), Just(",\"summaryIndex\":"), Just(",\"contentIndex\":")],
            n in slot(NUMBERS),
            at in slot(NUMBERS),
        ) {
            let index = if index.is_empty() { String::new() } else { format!("{index}{n}") };
            let line = format!(
                "{{\"method\":{m},\"params\":{{\"threadId\":{},\"turnId\":{},\"itemId\":{},\"delta\":{}{index}}},\"emittedAtMs\":{at}}}",
                ids[0], ids[1], ids[2], ids[3]
            );
            if delta_into(&line, &mut Message::default()).is_some() {
                let fast = top(&line).unwrap();
                let slow = serde_only(&line);
                prop_assert!(slow.is_ok(), "delta path accepted what serde rejects: {line}");
                prop_assert_eq!(summary(fast), summary(slow.unwrap()), "{}", line);
            }
        }

        /// Whenever the fast path accepts a line, serde accepts it too and reads the same fields.
        #[test]
        fn fast_path_agrees_with_serde(
            m in method(),
            members in proptest::collection::vec((key(), value()), 0..6),
            order in any::<bool>(),
            junk in prop_oneof![Just(""), Just(" "), Just("x"), Just("}")],
        ) {
            let mut parts: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let method = format!("\"method\":{m}");
            if order { parts.insert(0, method) } else { parts.push(method) }
            let line = format!("{{{}}}{junk}", parts.join(","));
            if let Some(fast) = top(&line) {
                let slow = serde_only(&line);
                prop_assert!(slow.is_ok(), "fast path accepted what serde rejects: {line}");
                prop_assert_eq!(summary(fast), summary(slow.unwrap()), "{}", line);
            }
        }
    }
}
