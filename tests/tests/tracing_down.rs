//! A collector that is down costs requests nothing (ADR 033): the exporter points at a closed
//! port; sends are answered, and the spans that could not leave are counted as dropped (the
//! time they take beside a server without an exporter is in the benchmarks). One test binary: the exporter is the process's.

use std::time::{Duration, Instant};

use serde_json::json;
use taskledger_infra::logging::LogFormat;
use taskledger_infra::otlp::OtlpSettings;
use taskledger_tests::binary::free_port;
use taskledger_tests::Server;

#[tokio::test]
async fn a_collector_that_is_down_slows_nothing_and_its_spans_are_counted_as_dropped() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let settings = OtlpSettings::new(Some(&closed), None, None, "taskledger-test")
        .unwrap()
        .unwrap();
    taskledger_app::compose::init_telemetry(LogFormat::Pretty { ansi: false }, Some(&settings))
        .unwrap();
    let server = Server::start().await;
    let started = Instant::now();
    for i in 0..20 {
        let v = server
            .call_with(
                "SendMessage",
                json!({"message": {"messageId": format!("down-{i}"), "role": "ROLE_USER",
                    "parts": [{"text": "hi"}]}}),
                &[(
                    "traceparent",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                )],
            )
            .await;
        assert!(v.get("error").is_none(), "{v}");
    }
    // (How long they took is the benchmarks' to say: `docs/benchmarks.md`.)
    eprintln!(
        "twenty sends with the collector down: {:?}",
        started.elapsed()
    );
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let dropped = taskledger_app::telemetry::metrics()
            .snapshot()
            .spans_dropped;
        if dropped > 0 {
            break;
        }
        assert!(Instant::now() < until, "no dropped span counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
