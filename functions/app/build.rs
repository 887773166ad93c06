//! With the `grpc` feature: compiles `proto/lf/a2a/v1/a2a.proto` (and A2A 0.3's
//! `proto/a2a/v1/a2a.proto`) with protox (pure Rust, no
//! protoc on the machine) into prost messages and a tonic client (the server side is
//! `grpc::routes`, on the descriptor set), and keeps the encoded descriptor set in OUT_DIR for
//! the ProtoJSON transcoding and the reflection service.

use std::path::PathBuf;

const PROTO: &str = "proto/lf/a2a/v1/a2a.proto";
/// The A2A 0.3 service (package `a2a.v1`), served beside it (ADR 031).
const PROTO_V03: &str = "proto/a2a/v1/a2a.proto";
/// taskledger's events extension (`taskledger.events.v1.TaskEvents`), served beside them.
const PROTO_EVENTS: &str = "proto/taskledger/events/v1/events.proto";
/// The descriptor set the `grpc` module embeds.
const DESCRIPTOR: &str = "a2a_descriptor.bin";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_GRPC").is_none() {
        return Ok(());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler.include_imports(true).include_source_info(false);
    compiler.open_file(PROTO)?;
    compiler.open_file(PROTO_V03)?;
    compiler.open_file(PROTO_EVENTS)?;
    std::fs::write(out.join(DESCRIPTOR), compiler.encode_file_descriptor_set())?;
    let mut config = tonic_prost_build::Config::new();
    config.enable_type_names();
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .compile_fds_with_config(compiler.file_descriptor_set(), config)?;
    Ok(())
}
