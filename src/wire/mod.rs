//! Bytes to typed lines. Decoding borrows from the input buffer; unknown shapes are data, not
//! errors (wire.md §1). Text that may reach a screen leaves this stage only through [`Clean`].

pub mod claude;
mod decode;
pub mod methods;
pub mod rollout;
mod sanitize;
mod scan;

pub use decode::{
    Breakdown, Decoded, Dir, Item, Line, Malformed, Message, Params, ParamsRest, ResultBody, Shape, Str, ThreadInfo,
    TokenUsage, TurnInfo, decode, decode_into, parse_raw,
};
pub use sanitize::{Clean, sanitize, sanitize_line};
