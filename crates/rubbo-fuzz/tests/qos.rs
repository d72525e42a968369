//! Fuzz: the QoS port's decoders, telnet command lines and HTTP requests (told apart
//! by the first byte), over an in-memory connection: every input gets its answer and
//! the connection ends, in bounded time.

#[test]
fn telnet_lines_and_http_requests() {
    rubbo_fuzz::targets::QOS.fuzz();
}
