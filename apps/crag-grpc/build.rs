//! Compiles proto/crag/v1/crag.proto (needs `protoc`, installed by scripts/setup).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not baked in with env!: a build script binary reused from a shared
    // target directory may have been compiled for a checkout at another path.
    let manifest_dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir.join("../../proto");
    let proto = root.join("crag/v1/crag.proto");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("crag_v1_descriptor.bin"))
        .codec_path("crate::codec::StrictCodec")
        .compile_protos(&[proto.as_path()], &[root.as_path()])?;
    println!("cargo:rerun-if-changed={}", proto.display());
    Ok(())
}
