//! `stackmeter fleet k8s`: the manifests as Kubernetes would read them.
//!
//! No API server or kubelet runs here, so the manifests are checked by
//! what can run: PyPI's `kubernetes-validate` with Kubernetes 1.32's JSON
//! schemas in strict mode (an unknown or misspelled field fails), installed
//! by the test into a virtual environment under target/py from the pinned
//! scripts/requirements-k8s.txt; PyYAML, a YAML 1.1 reader as Kubernetes'
//! is, reading the YAML back into exactly the JSON render (so no string
//! turned into a boolean or a number); the golden render byte for byte; and
//! one-line errors for bad flags and node names.
//!
//! The last test runs the image's command lines with podman: an image
//! built FROM scratch by scripts/scratch-image (the test binary, the
//! libraries `ldd` lists, the dynamic loader, a non-root user), run with
//! the security settings the manifests ask for, the Job's exact command
//! line against a responder container. It proves that the binary runs in a
//! container as the pods run it; it does not build deploy/Containerfile
//! (its FROM images cannot be pulled here: no registry is reachable).

use super::{missing, stackmeter, stderr};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/lab-fleet.toml");
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../k8s/tests/golden/lab-fleet.yaml");
const REQUIREMENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/requirements-k8s.txt");
/// The Kubernetes version the manifests are held to.
const K8S: &str = "1.32.0";

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

/// A folder of this test process's own under the target's tmp.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("k8s-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd` to its end or for at most `secs` (then kills it).
pub(crate) fn run_for(cmd: &mut Command, secs: u64) -> Result<Output, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{cmd:?} does not start: {e}"))?;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} still running after {secs} s: killed"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    })
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The validator's virtual environment (its python), installed once:
/// target/py, with a copy of the requirements it was installed from (a
/// changed pin installs again). Err: why it cannot be had.
fn validator() -> Result<PathBuf, String> {
    static V: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    V.get_or_init(install).clone()
}

fn install() -> Result<PathBuf, String> {
    let venv = target_dir().join("py");
    let python = venv.join("bin/python");
    let stamp = venv.join("installed-requirements.txt");
    let want = std::fs::read_to_string(REQUIREMENTS).map_err(|e| format!("{REQUIREMENTS}: {e}"))?;
    // Other test processes (another cargo test) may install at once.
    let lock = std::fs::File::create(target_dir().join("py.lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) && python.exists() {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&venv);
    // Debian's python (python3-venv, scripts/deps) when there is one.
    let system = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| !p.starts_with('/') || Path::new(p).exists())
        .unwrap();
    let o = run_for(Command::new(system).arg("-m").arg("venv").arg(&venv), 120)?;
    if !o.status.success() {
        return Err(format!(
            "{system} -m venv {}: {}",
            venv.display(),
            text(&o.stderr).trim()
        ));
    }
    let o = run_for(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "-r",
            REQUIREMENTS,
        ]),
        600,
    )?;
    if !o.status.success() {
        return Err(format!("pip install -r {REQUIREMENTS}: {}", text(&o.stderr).trim()));
    }
    std::fs::write(&stamp, want).map_err(|e| e.to_string())?;
    Ok(python)
}

/// `kubernetes-validate -k 1.32.0 --strict FILE`, through the venv's python.
fn validate(python: &Path, file: &Path) -> Output {
    let script = python.parent().unwrap().join("kubernetes-validate");
    run_for(
        Command::new(python).arg(script).args(["-k", K8S, "--strict"]).arg(file),
        120,
    )
    .unwrap()
}

/// The validator, or `None` after saying why the test cannot run.
fn validator_or_skip(test: &str) -> Option<PathBuf> {
    match validator() {
        Ok(p) => Some(p),
        Err(why) => {
            missing(test, &format!("kubernetes-validate cannot be installed: {why}"));
            None
        }
    }
}

/// `stackmeter fleet k8s FILE ARGS...`, expected to succeed: stdout.
fn render(file: &str, args: &[&str]) -> String {
    let out = stackmeter().args(["fleet", "k8s", file]).args(args).output().unwrap();
    assert!(out.status.success(), "fleet k8s {args:?}: {}", stderr(&out));
    text(&out.stdout)
}

#[test]
fn the_manifests_validate_against_kubernetes_1_32_in_strict_mode() {
    let test = "the_manifests_validate_against_kubernetes_1_32_in_strict_mode";
    let Some(python) = validator_or_skip(test) else { return };
    let dir = scratch("validate");
    let sets: [(&str, &[&str]); 4] = [
        ("default", &[]),
        (
            "host-network",
            &[
                "--host-network",
                "--toleration",
                "node-role.kubernetes.io/control-plane:NoSchedule",
                "--toleration",
                "dedicated=netbench:NoExecute",
                "--node-selector",
                "netbench=yes",
            ],
        ),
        ("no-db", &["--no-db", "--namespace", "bench", "--pull-policy", "Never"]),
        (
            "tolerate-all",
            &[
                "--tolerate-all",
                "--cpu",
                "1",
                "--cpu-limit",
                "1",
                "--memory",
                "256Mi",
                "--memory-limit",
                "256Mi",
                "--label",
                "team=net",
                "--metrics-port",
                "9464",
                "--image",
                "registry.example:5000/stackmeter:0.2.0",
                "--db-secret",
                "fleet-dsn",
                "--secret",
                "mesh-secret",
            ],
        ),
    ];
    for (name, args) in sets {
        let mut all = vec!["--run", "lab-validate"];
        all.extend_from_slice(args);
        let yaml = render(LAB, &all);
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, &yaml).unwrap();
        let o = validate(&python, &file);
        let report = format!("{}{}", text(&o.stdout), text(&o.stderr));
        eprintln!(
            "kubernetes-validate -k {K8S} --strict ({name}: {}):\n{report}",
            args.join(" ")
        );
        assert!(o.status.success(), "{name}: {report}");
        // Every document was checked, none passed over.
        let docs = yaml.split("\n---\n").count();
        assert_eq!(
            report.matches(" passed for resource ").count(),
            docs,
            "{name}: {report}"
        );
    }
}

#[test]
fn a_misspelled_field_fails_the_validation() {
    let test = "a_misspelled_field_fails_the_validation";
    let Some(python) = validator_or_skip(test) else { return };
    let dir = scratch("misspelled");
    let yaml = render(LAB, &["--run", "lab-validate"]);
    for (right, wrong) in [
        ("readOnlyRootFilesystem:", "readOnlyRootFileSystem:"),
        ("ttlSecondsAfterFinished:", "ttlSecondAfterFinished:"),
        ("clusterIP:", "clusterIp:"),
    ] {
        assert!(yaml.contains(right));
        let file = dir.join("bad.yaml");
        std::fs::write(&file, yaml.replacen(right, wrong, 1)).unwrap();
        let o = validate(&python, &file);
        let report = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert!(!o.status.success(), "{wrong} passed: {report}");
        let field = wrong.trim_end_matches(':');
        assert!(report.contains(&format!("'{field}' was unexpected")), "{report}");
        assert_eq!(report.matches("did not validate").count(), 1, "{report}");
    }
}

#[test]
fn the_yaml_reads_back_as_the_json_under_yaml_1_1() {
    let test = "the_yaml_reads_back_as_the_json_under_yaml_1_1";
    let Some(python) = validator_or_skip(test) else { return };
    let dir = scratch("yaml11");
    // A fleet file with what YAML makes hard: quotes, tabs, non-ASCII,
    // a trailing space, and labels YAML 1.1 reads as booleans or numbers.
    let fleet = dir.join("fleet.toml");
    std::fs::write(
        &fleet,
        "# \"quoted\" 'single' µs \\ back\\slash: colon # hash\nname = \"y\"\ndescription = \"on: off\"\n[[step]]\nname = \"on\"\ntest = \"rr\"\n\tsizes = \"1:1\"\n[[node]]\nname = \"yes\"\naddress = \"10.0.0.1\"\nlabels = { rack = \"12:30\" }\n[[node]]\nname = \"no\"\naddress = \"10.0.0.2\"\n",
    )
    .unwrap();
    let f = fleet.to_str().unwrap();
    let args = [
        "--run",
        "1_000",
        "--label",
        "flag=on",
        "--label",
        "mode=0755",
        "--label",
        "n=N",
        "--node-selector",
        "rack=off",
        "--toleration",
        "k=True:NoSchedule",
        "--namespace",
        "null",
    ];
    let yaml = render(f, &args);
    let json = render(f, &[&args[..], &["--json"]].concat());
    std::fs::write(dir.join("m.yaml"), &yaml).unwrap();
    std::fs::write(dir.join("m.json"), &json).unwrap();
    let check = "import json, sys, yaml\n\
        docs = list(yaml.safe_load_all(open(sys.argv[1], encoding='utf-8')))\n\
        items = json.load(open(sys.argv[2], encoding='utf-8'))['items']\n\
        if docs != items:\n\
        \x20   for d, i in zip(docs, items):\n\
        \x20       if d != i: print('YAML:', d, '\\nJSON:', i)\n\
        \x20   sys.exit(1)\n\
        print(len(docs), 'documents read back as the JSON')\n";
    let o = run_for(
        Command::new(&python)
            .arg("-c")
            .arg(check)
            .arg(dir.join("m.yaml"))
            .arg(dir.join("m.json")),
        60,
    )
    .unwrap();
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    // The ConfigMap's text came back exactly: it is the file.
    let list: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        list["items"][1]["data"]["fleet.toml"].as_str().unwrap(),
        std::fs::read_to_string(&fleet).unwrap()
    );
}

#[test]
fn the_default_render_of_the_example_is_the_golden_file() {
    let yaml = render(LAB, &["--run", "lab-golden", "--image", "stackmeter:golden"]);
    let golden = std::fs::read_to_string(GOLDEN).unwrap();
    assert!(
        yaml == golden,
        "`stackmeter fleet k8s` differs from {GOLDEN} (the fleet crate's test rewrites it: STACKMETER_WRITE_GOLDEN=1 cargo test -p stackmeter-fleet --test k8s)"
    );
    // Without --run every Job still gets one name: the fleet's and the time.
    let yaml = render(LAB, &[]);
    let runs: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("stackmeter/run: "))
        .collect();
    assert_eq!(runs.len(), 8, "two per Job");
    assert!(
        runs.iter()
            .all(|r| *r == runs[0] && r.starts_with("lab-20") && r.ends_with('Z')),
        "{runs:?}"
    );
}

#[test]
fn bad_options_and_node_names_give_one_line_naming_them() {
    let dir = scratch("errors");
    let bad_node = dir.join("fleet.toml");
    std::fs::write(
        &bad_node,
        std::fs::read_to_string(LAB).unwrap().replace("\"pc-b1\"", "\"PC_B1\""),
    )
    .unwrap();
    let bad_node = bad_node.to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec![LAB, "--namespace", "Bench"], "--namespace 'Bench': ".into()),
        (
            vec![LAB, "--toleration", "a=b:Never"],
            "--toleration 'a=b:Never': ".into(),
        ),
        (
            vec![LAB, "--node-selector", "rack"],
            "--node-selector 'rack': expected KEY=VALUE".into(),
        ),
        (vec![LAB, "--label", "a=b c"], "--label 'a=b c': ".into()),
        (
            vec![LAB, "--cpu", "2", "--cpu-limit", "1"],
            "--cpu 2 is above --cpu-limit 1".into(),
        ),
        (vec![LAB, "--memory", "lots"], "--memory 'lots': ".into()),
        (vec![LAB, "--metrics-port", "24680"], "--metrics-port 24680: ".into()),
        (vec![LAB, "--metrics-port", "70000"], "--metrics-port '70000': ".into()),
        (vec![LAB, "--run", "a b"], "--run 'a b': ".into()),
        (
            vec![LAB, "--pull-policy", "Sometimes"],
            "--pull-policy 'Sometimes': ".into(),
        ),
        (vec![LAB, "--image", ""], "--image '': ".into()),
        (vec![LAB, "--db-secret", "DB"], "--db-secret 'DB': ".into()),
        (vec![LAB, "--secret", "Mesh_Secret"], "--secret 'Mesh_Secret': ".into()),
        (
            vec![LAB, "--no-db", "--db-secret", "x"],
            "--no-db and --db-secret".into(),
        ),
        (
            vec![LAB, "--tolerate-all", "--toleration", "a"],
            "--tolerate-all ".into(),
        ),
        (vec![LAB, "--job-ttl", "0"], "--job-ttl 0: ".into()),
        (
            vec![bad_node.as_str()],
            format!("{bad_node}: node 'PC_B1' is not a Kubernetes node name"),
        ),
        (
            vec!["/nonexistent/fleet.toml"],
            "cannot read fleet file /nonexistent/fleet.toml".into(),
        ),
    ];
    for (args, want) in cases {
        let out = stackmeter().args(["fleet", "k8s"]).args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("stackmeter: error: {want}")),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_secret_variable_is_the_one_the_binary_reads() {
    assert_eq!(stackmeter_k8s::SECRET_ENV, stackmeter_engine::secret::ENV_SECRET);
}

/// Whether this build has the agent command (another part of the fleet
/// work): only then can the DaemonSet's command line be parsed.
fn has_agent() -> bool {
    stackmeter()
        .args(["agent", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The pod spec and container of each workload of a `--json` render.
fn workloads(list: &Value) -> Vec<(&str, &Value, &Value)> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "DaemonSet" || o["kind"] == "Job")
        .map(|o| {
            let pod = &o["spec"]["template"]["spec"];
            (o["kind"].as_str().unwrap(), pod, &pod["containers"][0])
        })
        .collect()
}

fn command(c: &Value) -> Vec<String> {
    c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_pods_command_lines_are_ones_the_binary_takes() {
    let list: Value = serde_json::from_str(&render(LAB, &["--run", "lab-x", "--json"])).unwrap();
    for (kind, _, c) in workloads(&list) {
        let cmd = command(c);
        assert_eq!(cmd[0], "stackmeter");
        if cmd[1] == "agent" && !has_agent() {
            eprintln!("note: this build has no `stackmeter agent`: the DaemonSet's command line is not parsed");
            continue;
        }
        // clap reads every flag before it gets to --help: an unknown one fails.
        let args: Vec<String> = cmd[1..]
            .iter()
            .map(|a| a.replace("$(POD_IP)", "10.0.0.1"))
            .chain(["--help".to_string()])
            .collect();
        let out = stackmeter().args(&args).output().unwrap();
        assert!(out.status.success(), "{kind}: {args:?}: {}", stderr(&out));
    }
}

/// Removes the test's containers and image when the test ends.
struct Podman {
    image: String,
    containers: Vec<String>,
}

impl Drop for Podman {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = run_for(Command::new("podman").args(["rm", "-f", "-t", "0", c]), 60);
        }
        let _ = run_for(Command::new("podman").args(["rmi", "-f", &self.image]), 60);
    }
}

/// scripts/scratch-image: an image FROM scratch holding the test's binary
/// at /usr/local/bin/stackmeter, every library `ldd` names (and the
/// loader) at its path, and a non-root user with the manifests' uid, left
/// in podman's store as `image` (scripts/k8s-local makes the local
/// cluster's image with the same script).
pub(crate) fn scratch_image(bin: &Path, image: &str) -> Result<(), String> {
    let o = run_for(Command::new(SCRATCH_IMAGE).args(["--tag", image]).arg(bin), 600)?;
    match o.status.success() {
        true => Ok(()),
        false => Err(format!("scripts/scratch-image: {}", text(&o.stderr).trim())),
    }
}

const SCRATCH_IMAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/scratch-image");

/// podman's flags for a container as pod `pod` runs `c`: the runtime
/// settings this kernel needs, then the pod's network, user, read-only
/// root, scratch /tmp, the fleet file's folder, capabilities and
/// environment (the downward API's values as they would be on a node
/// whose address is 127.0.0.1). Returns the flags and the command with
/// `$(VAR)` expanded as the kubelet does.
fn pod_flags(pod: &Value, c: &Value, node: &str, config: &Path) -> (Vec<String>, Vec<String>) {
    let mut f: Vec<String> = [
        "--runtime",
        "runc",
        "--ulimit",
        "nofile=20000:20000",
        "--ulimit",
        "nproc=32768:32768",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    assert_eq!(pod["hostNetwork"], true, "rendered with --host-network");
    f.extend(["--network".into(), "host".into()]);
    let sc = &pod["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    f.extend(["--user".into(), format!("{}:{}", sc["runAsUser"], sc["runAsGroup"])]);
    let csc = &c["securityContext"];
    if csc["readOnlyRootFilesystem"] == true {
        f.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    }
    if csc["allowPrivilegeEscalation"] == false {
        f.extend(["--security-opt".into(), "no-new-privileges".into()]);
    }
    for cap in csc["capabilities"]["drop"].as_array().unwrap() {
        f.extend(["--cap-drop".into(), cap.as_str().unwrap().to_string()]);
    }
    for m in c["volumeMounts"].as_array().unwrap() {
        let path = m["mountPath"].as_str().unwrap();
        let vol = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == m["name"])
            .unwrap();
        if vol.get("emptyDir").is_some() {
            f.extend(["--tmpfs".into(), path.to_string()]);
        } else if vol.get("configMap").is_some() {
            let ro = if m["readOnly"] == true { ":ro" } else { "" };
            f.extend(["-v".into(), format!("{}:{path}{ro}", config.display())]);
        }
    }
    let mut env = Vec::new();
    for e in c["env"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap().to_string();
        let value = match (&e["value"], &e["valueFrom"]["fieldRef"]["fieldPath"]) {
            (Value::String(v), _) => v.clone(),
            (_, Value::String(p)) if p == "status.podIP" => "127.0.0.1".into(),
            (_, Value::String(p)) if p == "spec.nodeName" => node.into(),
            _ => panic!("--no-db renders take nothing from Secrets: {e}"),
        };
        f.extend(["-e".into(), format!("{name}={value}")]);
        env.push((name, value));
    }
    let cmd = command(c)
        .into_iter()
        .map(|a| env.iter().fold(a, |a, (k, v)| a.replace(&format!("$({k})"), v)))
        .collect();
    (f, cmd)
}

/// `podman run --rm FLAGS --entrypoint CMD[0] IMAGE CMD[1..]`.
fn podman_run(flags: &[String], image: &str, cmd: &[String], extra: &[&str]) -> Command {
    let mut p = Command::new("podman");
    p.args(["run", "--rm"])
        .args(extra)
        .args(flags)
        .arg("--entrypoint")
        .arg(&cmd[0])
        .arg(image)
        .args(&cmd[1..]);
    p
}

#[test]
fn the_image_runs_the_manifests_command_lines() {
    let test = "the_image_runs_the_manifests_command_lines";
    if !super::is_root() {
        return missing(test, "podman here runs images as root");
    }
    if run_for(Command::new("podman").arg("--version"), 30).map_or(true, |o| !o.status.success()) {
        return missing(test, "podman is not installed (Debian's podman and runc: scripts/deps)");
    }
    let dir = scratch("podman");
    let image = format!("localhost/stackmeter-k8s-test:{}", std::process::id());
    let mut guard = Podman {
        image: image.clone(),
        containers: Vec::new(),
    };
    if let Err(why) = scratch_image(Path::new(env!("CARGO_BIN_EXE_stackmeter")), &image) {
        return missing(test, &why);
    }
    assert_eq!(stackmeter_k8s::IMAGE_UID, 10001, "scripts/scratch-image's user");

    // A fleet of two nodes on this host: a client and a target-only node
    // whose responder is a container listening on the fleet's port.
    let port = super::closed_port();
    let fleet = format!(
        "name = \"podman\"\nport = {port}\n[[step]]\nname = \"latency\"\ntest = \"rr\"\nsizes = \"1:1\"\niterations = 50\nwarmup = 5\n[[step]]\nname = \"echo\"\ntest = \"ping\"\ncount = 50\n[[node]]\nname = \"pc-1\"\naddress = \"127.0.0.1\"\n[[node]]\nname = \"board-1\"\naddress = \"127.0.0.1\"\nclient = false\n"
    );
    let fleet_file = dir.join("fleet.toml");
    std::fs::write(&fleet_file, &fleet).unwrap();
    let list: Value = serde_json::from_str(&render(
        fleet_file.to_str().unwrap(),
        &[
            "--no-db",
            "--host-network",
            "--run",
            "podman-run",
            "--image",
            &image,
            "--json",
        ],
    ))
    .unwrap();
    // The ConfigMap's file, in the folder the pods mount.
    let config = dir.join("etc-stackmeter");
    std::fs::create_dir_all(&config).unwrap();
    let cm = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .unwrap();
    std::fs::write(config.join("fleet.toml"), cm["data"]["fleet.toml"].as_str().unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(config.join("fleet.toml"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let work = workloads(&list);
    let (_, ds_pod, ds_c) = work.iter().find(|w| w.0 == "DaemonSet").unwrap();
    let (_, job_pod, job_c) = work.iter().find(|w| w.0 == "Job").unwrap();
    let (ds_flags, ds_cmd) = pod_flags(ds_pod, ds_c, "board-1", &config);

    // The binary starts in the image as the responders' pods run it; the
    // first run says why when this machine's podman cannot run anything.
    let version = [String::from("stackmeter"), "--version".into()];
    let o = run_for(&mut podman_run(&ds_flags, &image, &version, &[]), 120).unwrap();
    if !o.status.success() {
        return missing(test, &format!("podman run: {}", text(&o.stderr).trim()));
    }
    assert_eq!(
        text(&o.stdout).trim(),
        format!("stackmeter {}", env!("CARGO_PKG_VERSION"))
    );
    // A measurement inside, against the embedded responder.
    let rr: Vec<String> = ["stackmeter", "rr", "--sizes", "1:1", "-n", "20", "--no-store", "--json"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let o = run_for(&mut podman_run(&ds_flags, &image, &rr, &[]), 120).unwrap();
    assert!(o.status.success(), "rr in the image: {}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["test"], "rr");
    assert_eq!(doc["target"]["embedded"], true);
    // The DaemonSet's own command line, where this build has the agent.
    if has_agent() {
        let help: Vec<String> = ds_cmd.iter().cloned().chain(["--help".into()]).collect();
        let o = run_for(&mut podman_run(&ds_flags, &image, &help, &[]), 120).unwrap();
        assert!(o.status.success(), "{help:?} in the image: {}", text(&o.stderr));
    } else {
        eprintln!("note: this build has no `stackmeter agent`: the DaemonSet's command line is not run");
    }

    // The responder: `serve` on the DaemonSet's listening address, with
    // the DaemonSet's settings.
    let listen = ds_cmd
        .iter()
        .position(|a| a == "--listen")
        .map(|i| ds_cmd[i + 1].clone())
        .unwrap();
    assert_eq!(listen, format!("0.0.0.0:{port}"));
    let name = format!("stackmeter-k8s-responder-{}", std::process::id());
    guard.containers.push(name.clone());
    let serve = ["stackmeter".to_string(), "serve".into(), "--listen".into(), listen];
    let mut responder = podman_run(&ds_flags, &image, &serve, &["--name", &name])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As the readiness probe: a TCP connection to the port.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_err() {
        if Instant::now() > deadline || responder.try_wait().unwrap().is_some() {
            let _ = responder.kill();
            let mut e = String::new();
            let _ = responder.stderr.take().unwrap().read_to_string(&mut e);
            panic!("the responder container did not listen on {port}: {e}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // The Job's exact command line, with the Job's settings.
    let (job_flags, job_cmd) = pod_flags(job_pod, job_c, "pc-1", &config);
    assert_eq!(
        job_cmd,
        [
            "stackmeter",
            "fleet",
            "run",
            "/etc/stackmeter/fleet.toml",
            "--node",
            "pc-1",
            "--run",
            "podman-run",
            "--no-store"
        ]
    );
    let o = run_for(&mut podman_run(&job_flags, &image, &job_cmd, &[]), 300).unwrap();
    let _ = run_for(Command::new("podman").args(["rm", "-f", "-t", "0", &name]), 60);
    let _ = responder.kill();
    let _ = responder.wait();
    assert!(
        o.status.success(),
        "the Job's command in the image: {}",
        text(&o.stderr)
    );
    let lines: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one JSON line per test: {lines:?}");
    for (l, (step, test)) in lines.iter().zip([("latency", "rr"), ("echo", "ping")]) {
        assert_eq!(l["run"], "podman-run");
        assert_eq!(l["fleet"], "podman");
        assert_eq!(
            (l["client"].as_str(), l["target"].as_str()),
            (Some("pc-1"), Some("board-1"))
        );
        assert_eq!((l["step"].as_str(), l["test"].as_str()), (Some(step), Some(test)));
        assert_eq!(l["document"]["test"], test);
    }
    eprintln!(
        "podman: {image} ran --version, rr (embedded) and the Job's command line against a responder container; stderr of the Job:\n{}",
        text(&o.stderr)
    );
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}
