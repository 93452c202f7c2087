//! Compiles `c/fake_cuda.c` into a shared library named `libcuda.so.1` and `libcuda.so` (the
//! names cudarc's loader tries first) in a folder of its own, whose path the crate exports.

use std::path::PathBuf;

fn main() {
    let source = "c/fake_cuda.c";
    println!("cargo:rerun-if-changed={source}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("lib");
    std::fs::create_dir_all(&dir).expect("create the library folder");
    let library = dir.join("libcuda.so.1");
    // cc finds the C compiler and its flags the way every build script does; the shared
    // library itself is linked by that compiler (cc::Build only makes static archives).
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .opt_level(2)
        .get_compiler();
    let status = compiler
        .to_command()
        .args([
            "-shared",
            "-fPIC",
            "-std=c11",
            "-D_GNU_SOURCE",
            "-Wall",
            "-Werror",
            "-o",
        ])
        .arg(&library)
        .arg(source)
        .arg("-lpthread")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling {source} failed");
    // cudarc tries `libcuda.so` before `libcuda.so.1`: both names must resolve here, or a
    // machine with a real driver's `libcuda.so` would load that one instead.
    std::fs::copy(&library, dir.join("libcuda.so")).expect("copy the library as libcuda.so");
    println!("cargo:rustc-env=FAKE_CUDA_DRIVER_DIR={}", dir.display());
}
