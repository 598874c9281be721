//! The terminal's lifecycle in one place: raw mode, the alternate screen and mouse capture are
//! entered together and undone together — by the guard's `Drop` on every normal or error path, and
//! by a panic hook chained before the previous one, so a panic message lands on a sane terminal.

use std::io::{self, IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use color_eyre::eyre::{Result, WrapErr, bail};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Whether the terminal is in the monitor's modes now; restoring twice must be harmless.
static ENTERED: AtomicBool = AtomicBool::new(false);
static HOOKED: AtomicBool = AtomicBool::new(false);

pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    pub fn enter() -> Result<Self> {
        if !io::stdout().is_terminal() {
            bail!("the monitor needs a terminal on stdout; for scripts use `swarmtop stats` or `swarmtop tree`");
        }
        install_panic_hook();
        enable_raw_mode().wrap_err("entering raw mode")?;
        ENTERED.store(true, Ordering::SeqCst);
        let mut stdout = io::stdout();
        if let Err(e) = execute!(stdout, EnterAlternateScreen, EnableMouseCapture, cursor::Hide) {
            restore();
            return Err(e).wrap_err("entering the alternate screen");
        }
        let terminal = match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e).wrap_err("opening the terminal");
            }
        };
        Ok(Self { terminal })
    }
}

impl TerminalGuard {
    /// Ctrl-Z: raw mode turns the key into input, so the monitor stops itself — the terminal
    /// restored first, exactly as on quit — and takes the screen back when the shell resumes it.
    pub fn suspend(&mut self) -> Result<()> {
        restore();
        // The whole process group, as the terminal's own ^Z would: in `cmd | swarmtop` the shell
        // reports the job stopped only once every process of it is.
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(0), nix::sys::signal::Signal::SIGTSTP)
            .wrap_err("stopping")?;
        // Here again after `fg` (SIGCONT).
        enable_raw_mode().wrap_err("entering raw mode")?;
        ENTERED.store(true, Ordering::SeqCst);
        execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture, cursor::Hide)
            .wrap_err("entering the alternate screen")?;
        self.terminal.clear().wrap_err("clearing the screen")?;
        Ok(())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Undoes exactly what `enter` did, once.
pub fn restore() {
    if ENTERED.swap(false, Ordering::SeqCst) {
        let mut stdout = io::stdout();
        let _ = execute!(stdout, DisableMouseCapture, LeaveAlternateScreen, cursor::Show);
        let _ = disable_raw_mode();
        let _ = stdout.flush();
    }
}

fn install_panic_hook() {
    if HOOKED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
