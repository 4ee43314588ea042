//! wasmsched-c-bindgen WIT_DIR OUT_DIR: writes the C bindings of world
//! `scheduler-plugin` (the same output as `wit-bindgen c WIT_DIR --world
//! scheduler-plugin --autodrop-borrows yes --out-dir OUT_DIR`, wit-bindgen 0.63).

use anyhow::{Context, Result};
use std::path::PathBuf;

fn main() -> Result<()> {
    let mut args = std::env::args_os().skip(1);
    let wit = PathBuf::from(args.next().context("usage: wasmsched-c-bindgen WIT_DIR OUT_DIR")?);
    let out = PathBuf::from(args.next().context("usage: wasmsched-c-bindgen WIT_DIR OUT_DIR")?);

    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_path(&wit).with_context(|| format!("reading {}", wit.display()))?;
    let world = resolve.select_world(&[pkg], Some("scheduler-plugin"))?;

    let mut files = wit_bindgen_core::Files::default();
    // Exports receive `borrow<pod>` / `borrow<nodes>` of imported resources:
    // the generated glue drops them when the export returns (the host traps
    // when a borrow outlives the call).
    let opts = wit_bindgen_c::Opts {
        autodrop_borrows: wit_bindgen_c::Enabled::Yes,
        ..Default::default()
    };
    opts.build().generate(&mut resolve, world, &mut files)?;

    std::fs::create_dir_all(&out)?;
    for (name, contents) in files.iter() {
        let path = out.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
