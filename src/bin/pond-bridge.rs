//! `pond-bridge SOCKET LOG EXE [SERVE_ARGS…]`: the bridge of `pond mcp` in a binary of its
//! own. `pond mcp` reaches (or starts) the store's server, then executes this in its place:
//! a process that copies lines needs none of pond's libraries, and a small binary does not
//! pay for the large one's relocated data (about 7 MiB of private memory per bridge, one
//! bridge per agent session).

use std::path::PathBuf;
use std::process::ExitCode;

use pond_bridge_lib::bridge;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(socket), Some(log), Some(exe)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: pond-bridge SOCKET LOG EXE [SERVE_ARGS...] (run by `pond mcp`)");
        return ExitCode::FAILURE;
    };
    let b = bridge::Bridge {
        socket: PathBuf::from(socket),
        log: PathBuf::from(log),
        exe: PathBuf::from(exe),
        serve_args: args.collect(),
    };
    match b.connect().and_then(|first| b.run(first)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pond mcp: {e}");
            ExitCode::FAILURE
        }
    }
}
