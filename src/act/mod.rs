//! Acting on a swarm (design.md, "The audit trail and acting"): guards that refuse or stop what
//! passes a limit, interrupts of one agent or a subtree, notifications. It reads the model as
//! every other consumer does and decides; the commands and the tee carry its decisions out.

pub mod control;
pub mod hook;
pub mod limits;
pub mod log;
pub mod notify;
pub mod record;
pub mod served;
pub mod server;
pub mod settings;
pub mod signal;
pub mod target;
pub mod tee;
pub mod watch;

pub use limits::{Breach, Limits, Spend};
