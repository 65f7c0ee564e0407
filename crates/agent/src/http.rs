//! `GET /metrics` over HTTP (`tiny_http`, synchronous): the registry
//! encoded at each scrape in the format the scraper asked for. One thread
//! answers one request at a time; a scrape costs one encoding of the
//! registry, well under a millisecond for a few dozen peers. Anything else
//! is 404 (another path) or 405 (another method).

use crate::ctx::Ctx;
use crate::error::StartError;
use crate::exposition;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Header, Method, Response, Server};

/// How often the thread looks at the stop flag.
const LOOK: Duration = Duration::from_millis(200);

/// Binds the metrics address; the error names it.
pub(crate) fn bind(addr: SocketAddr) -> Result<(Server, SocketAddr), StartError> {
    let server = Server::http(addr).map_err(|err| StartError::Metrics { addr, err })?;
    let bound = server.server_addr().to_ip().unwrap_or(addr);
    Ok((server, bound))
}

/// Answers scrapes until the stop.
pub(crate) fn serve(server: &Server, ctx: &Arc<Ctx>) {
    while !ctx.stop.is_set() {
        let req = match server.recv_timeout(LOOK) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                crate::log::warn(&format!("metrics: receiving a request failed: {e}"));
                std::thread::sleep(LOOK);
                continue;
            }
        };
        let path = req.url().split('?').next().unwrap_or("");
        let response = if path != "/metrics" {
            Response::from_string("not found: the metrics are at /metrics\n").with_status_code(404)
        } else if !matches!(req.method(), Method::Get | Method::Head) {
            Response::from_string("only GET\n").with_status_code(405)
        } else {
            let accept = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Accept"))
                .map(|h| h.value.as_str());
            let format = exposition::negotiate(accept);
            let body = ctx.metrics.encode(format);
            let mut r = Response::from_string(body);
            if let Ok(h) = Header::from_bytes("Content-Type", format.content_type()) {
                r = r.with_header(h);
            }
            r
        };
        // A scraper that went away is its own problem.
        let _ = req.respond(response);
    }
}
