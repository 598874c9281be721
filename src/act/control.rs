//! How a running turn is stopped through the tee that carries its session: what the agent's
//! record says (`source::agents::control::TeeControl`), found by the format of the session's
//! traffic. The tee writes it into the session; neither it nor this names an agent.

use crate::source::agents::{self, control::TeeControl};

pub use crate::source::agents::control::{TeeRequest, Turn};

/// The way to stop a turn in a session whose traffic is in `format` (`Pipeline::format`).
pub fn for_format(format: &str) -> Option<&'static TeeControl> {
    agents::of_format(format)?.control.tee.as_ref()
}
