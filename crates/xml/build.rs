//! Links libxslt (and, through it, libxml2) via pkg-config and compiles the
//! small variadic error-callback shim in `csrc/`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/error_shim.c");
    let xslt = pkg_config::Config::new()
        .atleast_version("1.1.28")
        .probe("libxslt")
        .expect("libxslt not found via pkg-config (install libxslt1-dev)");
    let mut build = cc::Build::new();
    build.file("csrc/error_shim.c").warnings(true);
    for dir in &xslt.include_paths {
        build.include(dir);
    }
    build.compile("sluice_xml_shim");
}
