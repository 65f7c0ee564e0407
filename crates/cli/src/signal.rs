//! Ctrl-C for a command that measures: the first one asks the loops to end
//! early (they look at the flag between transactions) so the command
//! prints and stores what finished, marked partial; a second one quits at
//! once.

use std::io::Write;
use std::time::Duration;

/// Catches SIGINT and SIGTERM from now on, and watches for them.
pub fn catch() -> Result<(), String> {
    stackmeter_sys::interrupt::catch_interrupts().map_err(|e| format!("cannot catch Ctrl-C: {e}"))?;
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
