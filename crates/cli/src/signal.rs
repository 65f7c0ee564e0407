//! Ctrl-C for a command that measures: the first one asks the loops to end
//! early (they look at the flag between transactions) so the command
//! prints and stores what finished, marked partial; a second one quits at
//! once.

use std::io::Write;
use std::time::Duration;

/// Signal handlers the system would not install.
#[derive(Debug)]
pub struct CatchError(std::io::Error);

impl std::fmt::Display for CatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot catch Ctrl-C: {}", self.0)
    }
}

/// Catches SIGINT and SIGTERM from now on, and watches for them.
pub fn catch() -> Result<(), CatchError> {
    stackmeter_sys::interrupt::catch_interrupts().map_err(CatchError)?;
    std::thread::spawn(|| {
        let mut told = false;
        loop {
            std::thread::sleep(Duration::from_millis(50));
            match stackmeter_sys::interrupt::interrupts() {
                0 => {}
                1 if !told => {
                    told = true;
                    eprintln!("\nstackmeter: interrupted: ending the test, keeping what finished (Ctrl-C again to quit at once)");
                }
                1 => {}
                _ => {
                    eprintln!("stackmeter: interrupted twice: quitting without the result");
                    let _ = std::io::stderr().flush();
                    std::process::exit(130);
                }
            }
        }
    });
    Ok(())
}
