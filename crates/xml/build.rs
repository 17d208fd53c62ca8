//! Links libxslt (and, through it, libxml2) and xmlsec1 with its OpenSSL back-end via pkg-config,
//! and compiles the two C shims in `csrc/`: the variadic error callback, and the xmlsec1 calls
//! (its contexts' layout depends on the defines pkg-config gives, so they are made in C).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/error_shim.c");
    println!("cargo:rerun-if-changed=csrc/xmlsec_shim.c");
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

    // Its flags first, its libraries after the shim that needs them (a linker that drops
    // libraries nothing before them needs would otherwise drop them).
    let probe = |metadata: bool| {
        pkg_config::Config::new()
            .atleast_version("1.2.30")
            .cargo_metadata(metadata)
            .probe("xmlsec1-openssl")
            .expect("xmlsec1 not found via pkg-config (install libxmlsec1-dev)")
    };
    let xmlsec = probe(false);
    let mut build = cc::Build::new();
    build.file("csrc/xmlsec_shim.c").warnings(true);
    for dir in &xmlsec.include_paths {
        build.include(dir);
    }
    for (name, value) in &xmlsec.defines {
        build.define(name, value.as_deref());
    }
    build.compile("sluice_xmlsec_shim");
    probe(true);
}
