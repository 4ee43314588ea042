//! `wasmsched ui`: a scheduler's web view on localhost, for a person. The
//! admin port authenticates every request but the probes' with a bearer
//! token, which a browser cannot present; this forwards the browser's
//! requests to the admin port with the person's token.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The admin port, usually through `kubectl -n wasmsched port-forward deploy/wasmsched 10259`.
    #[arg(long, default_value = "https://127.0.0.1:10259")]
    admin: String,
    /// A file holding the bearer token to present, e.g. from `kubectl create token NAME`
    /// (a user or service account bound to the ClusterRole `wasmsched:viewer`).
    #[arg(long)]
    token_file: PathBuf,
    /// The CA of the admin port's certificate (default: any certificate, as the self-signed one a
    /// replica makes; the token is what the admin port checks).
    #[arg(long)]
    certificate_authority: Option<PathBuf>,
    /// Where the web view is served (a loopback address).
    #[arg(long, default_value = "127.0.0.1:10251")]
    listen: SocketAddr,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let (addr, task) = wasmsched_kube::admin_proxy::serve(wasmsched_kube::admin_proxy::ProxyOptions {
            listen: args.listen,
            upstream: args.admin.clone(),
            token_file: args.token_file,
            ca: args.certificate_authority,
        })
        .await?;
        eprintln!("web view of {}: http://{addr}/ui (Ctrl-C to stop)", args.admin);
        tokio::select! {
            _ = crate::run::shutdown_signal() => {}
            _ = task => {}
        }
        Ok(())
    })
}
