//! The interrupt dialog's state (`i` on the selected agent, `I` on its subtree): what will stop,
//! through what and how, asked before anything is done, then how it went (`dialog` draws it). The
//! screen only shows and asks: finding what carries the agent and stopping it happen off its
//! thread (`commands::acting`), whose answers come back as [`Reply`]s.

/// What the screen asks to be found, then done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Which dialog asks: an answer to one since closed is dropped.
    pub seq: u64,
    /// The agent's full id (a thread's or session's).
    pub target: String,
    /// Its whole subtree too, the deepest first.
    pub subtree: bool,
}

/// What will stop and how, found before the question is asked. Every line is sanitised by who
/// writes it (names and ids come from the agents' files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Through what, and by which of the agent's own means.
    pub how: Vec<String>,
    /// What stops, in the order it will (the deepest first), one line each.
    pub stops: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Looking for what carries the agent.
    Finding,
    /// Stops on `y`.
    Ready(Plan),
    /// Nothing can be stopped, and why.
    Unable(String),
    Stopping(Plan),
    /// What each stop confirmed, or why it failed.
    Done(Plan, Result<Vec<String>, String>),
}

#[derive(Debug, Clone)]
pub struct Dialog {
    pub ask: Ask,
    /// The agent as the tree names it.
    pub label: String,
    pub stage: Stage,
}

/// An answer from off the screen's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Planned(Result<Plan, String>),
    Done(Result<Vec<String>, String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub seq: u64,
    pub answer: Answer,
}

/// The dialog's state in the view: the open one (or one stopping after it was closed), and the
/// last number handed out.
#[derive(Debug, Clone, Default)]
pub struct Acting {
    pub dialog: Option<Dialog>,
    pub seq: u64,
}

impl Acting {
    /// Opens the dialog for `target`; the ask to find what carries it.
    pub fn open(&mut self, target: String, label: String, subtree: bool) -> Ask {
        self.seq += 1;
        let ask = Ask { seq: self.seq, target, subtree };
        self.dialog = Some(Dialog { ask: ask.clone(), label, stage: Stage::Finding });
        ask
    }

    /// `y`: the ask to stop what the dialog names, when it names something.
    pub fn confirm(&mut self) -> Option<Ask> {
        let d = self.dialog.as_mut()?;
        let Stage::Ready(plan) = &d.stage else { return None };
        d.stage = Stage::Stopping(plan.clone());
        Some(d.ask.clone())
    }

    /// Esc: closes the dialog. One that is stopping stays (unseen) for its answer, which the
    /// footer then tells.
    pub fn close(&mut self) {
        if !matches!(self.dialog.as_ref().map(|d| &d.stage), Some(Stage::Stopping(_))) {
            self.dialog = None;
        }
    }

    /// An answer; what the footer says of it (when an act ended).
    pub fn take(&mut self, reply: Reply) -> Option<String> {
        let d = self.dialog.as_mut().filter(|d| d.ask.seq == reply.seq)?;
        match (reply.answer, &d.stage) {
            (Answer::Planned(Ok(plan)), Stage::Finding) => d.stage = Stage::Ready(plan),
            (Answer::Planned(Err(why)), Stage::Finding) => d.stage = Stage::Unable(why),
            (Answer::Done(result), Stage::Stopping(plan)) => {
                let said = match &result {
                    Ok(_) => format!("interrupted {}", d.label),
                    Err(why) => format!("interrupting {} failed: {why}", d.label),
                };
                d.stage = Stage::Done(plan.clone(), result);
                return Some(said);
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan { how: vec!["through the tee".into()], stops: vec!["scout [1234]".into()] }
    }

    #[test]
    fn an_answer_moves_only_its_own_dialog_and_only_forward() {
        let mut a = Acting::default();
        let first = a.open("t1".into(), "scout".into(), false);
        a.close();
        let second = a.open("t2".into(), "tester".into(), true);
        assert_eq!(a.take(Reply { seq: first.seq, answer: Answer::Planned(Ok(plan())) }), None);
        assert_eq!(a.dialog.as_ref().unwrap().stage, Stage::Finding, "an answer to a closed dialog is dropped");
        assert_eq!(a.confirm(), None, "nothing to confirm while finding");
        a.take(Reply { seq: second.seq, answer: Answer::Planned(Ok(plan())) });
        assert_eq!(a.confirm(), Some(second.clone()));
        a.close();
        assert!(a.dialog.is_some(), "a dialog that is stopping waits for its answer");
        let said = a.take(Reply { seq: second.seq, answer: Answer::Done(Err("gone".into())) });
        assert_eq!(said.as_deref(), Some("interrupting tester failed: gone"));
        a.close();
        assert!(a.dialog.is_none());
    }
}
