//! `sluice-echo`: the measuring kit's echo back-end as a process.

use clap::Parser;
use sluice_echo::{EchoOptions, EchoServer};
use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Answers every request with its own body and Content-Type (keep-alive, streaming).
#[derive(Parser)]
#[command(name = "sluice-echo", version)]
struct Cli {
    /// Address to listen on (port 0 picks a free one; the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Delay before every answer, in milliseconds (a request's X-Echo-Delay-Ms header replaces it).
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let threads = cli
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let opts = EchoOptions {
        delay: Duration::from_millis(cli.delay_ms),
    };
    let server = match EchoServer::bind_and_start(cli.listen, threads, opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sluice-echo: cannot listen on {}: {e}", cli.listen);
            return std::process::ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "sluice-echo listening on http://{}", server.addr());
    let _ = out.flush();
    drop(out);
    // Serve until killed: the worker threads never finish on their own.
    loop {
        std::thread::park();
    }
}
