//! Where spans go and how they are labelled: the command line first, then the standard
//! OpenTelemetry variables (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`),
//! then the SDKs' defaults.

use std::path::PathBuf;
use std::time::Duration;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};

/// The SDKs' default OTLP/HTTP endpoint.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
const TRACES_PATH: &str = "/v1/traces";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `http/protobuf`, the SDKs' default.
    Protobuf,
    /// `http/json`.
    Json,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Http {
        url: String,
        encoding: Encoding,
        headers: Vec<(String, String)>,
        timeout: Duration,
    },
    /// OTLP/JSON lines, one export request per line, as a collector's file receiver reads them.
    File(PathBuf),
}

impl Target {
    /// Where the spans go, for messages (never the headers: they carry credentials).
    pub fn describe(&self) -> String {
        match self {
            Self::Http { url, .. } => url.clone(),
            Self::File(path) => path.display().to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub target: Target,
    pub resource: Vec<KeyValue>,
}

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `--otlp URL` (`None`: from the environment).
    pub url: Option<String>,
    /// `--otlp-file PATH`.
    pub file: Option<PathBuf>,
}

/// Settings from the request and the environment (`env` looks a variable up; tests pass a map).
pub fn resolve(request: &Request, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
    let var = |k: &str| env(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let target = if let Some(path) = &request.file {
        Target::File(path.clone())
    } else {
        let url = match (&request.url, var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _, _) => signal_url(url),
            // The per-signal variable is used as it is; the general one gets the signal's path.
            (None, Some(url), _) => url,
            (None, None, Some(base)) => format!("{}{TRACES_PATH}", base.trim_end_matches('/')),
            (None, None, None) => format!("{DEFAULT_ENDPOINT}{TRACES_PATH}"),
        };
        check_url(&url)?;
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        let encoding = match protocol.as_deref() {
            None | Some("http/protobuf") => Encoding::Protobuf,
            Some("http/json") => Encoding::Json,
            Some("grpc") => return Err("OTLP over gRPC is not supported: use http/protobuf or http/json".to_owned()),
            Some(other) => return Err(format!("unknown OTLP protocol {other:?} (use http/protobuf or http/json)")),
        };
        let mut headers = parse_pairs(var("OTEL_EXPORTER_OTLP_HEADERS").as_deref().unwrap_or(""));
        for (k, v) in parse_pairs(var("OTEL_EXPORTER_OTLP_TRACES_HEADERS").as_deref().unwrap_or("")) {
            headers.retain(|(hk, _)| !hk.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
        let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|ms| ms.parse::<u64>().ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        Target::Http { url, encoding, headers, timeout }
    };
    Ok(Settings { target, resource: resource(env) })
}

/// `--otlp URL` names the collector; its traces path is added unless the URL already has it.
fn signal_url(url: &str) -> String {
    let url = url.trim();
    if url.trim_end_matches('/').ends_with(TRACES_PATH) {
        url.to_owned()
    } else {
        format!("{}{TRACES_PATH}", url.trim_end_matches('/'))
    }
}

fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("http://") {
        Ok(())
    } else if url.starts_with("https://") {
        Err(format!(
            "{url}: swarmtop sends OTLP over plain http; for a TLS collector, run a local collector or relay and point swarmtop at it"
        ))
    } else {
        Err(format!("{url}: an OTLP/HTTP endpoint looks like http://HOST:4318"))
    }
}

/// `k1=v1,k2=v2` with percent-encoded values, the format of the OTLP header and resource variables.
/// Malformed entries are skipped, as the SDKs do.
fn parse_pairs(s: &str) -> Vec<(String, String)> {
    s.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = percent_encoding::percent_decode_str(k.trim()).decode_utf8().ok()?.trim().to_owned();
            let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8().ok()?.trim().to_owned();
            (!k.is_empty()).then_some((k, v))
        })
        .collect()
}

/// The resource every span is sent with: `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME` over its
/// `service.name`, and swarmtop's name and version.
fn resource(env: &dyn Fn(&str) -> Option<String>) -> Vec<KeyValue> {
    let mut pairs = parse_pairs(env("OTEL_RESOURCE_ATTRIBUTES").as_deref().unwrap_or(""));
    if let Some(name) = env("OTEL_SERVICE_NAME").map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()) {
        pairs.retain(|(k, _)| k != "service.name");
        pairs.push(("service.name".to_owned(), name));
    }
    if !pairs.iter().any(|(k, _)| k == "service.name") {
        pairs.push(("service.name".to_owned(), "swarmtop".to_owned()));
    }
    pairs.push(("telemetry.sdk.name".to_owned(), "swarmtop".to_owned()));
    pairs.push(("telemetry.sdk.version".to_owned(), env!("CARGO_PKG_VERSION").to_owned()));
    pairs
        .into_iter()
        .map(|(key, v)| KeyValue {
            key: crate::wire::sanitize(&key).to_string(),
            value: Some(AnyValue { value: Some(Value::StringValue(crate::wire::sanitize(&v).to_string())) }),
            ..KeyValue::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |k| vars.iter().find(|(vk, _)| vk == k).map(|(_, v)| v.clone())
    }

    fn url_of(s: &Settings) -> &str {
        match &s.target {
            Target::Http { url, .. } => url,
            Target::File(_) => "",
        }
    }

    #[test]
    fn endpoints_resolve_like_the_sdks() {
        let none = env_of(&[]);
        assert_eq!(url_of(&resolve(&Request::default(), &none).unwrap()), "http://localhost:4318/v1/traces");
        let base = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]);
        assert_eq!(url_of(&resolve(&Request::default(), &base).unwrap()), "http://c:4318/v1/traces");
        let signal = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
        ]);
        assert_eq!(url_of(&resolve(&Request::default(), &signal).unwrap()), "http://t:1/x");
        let flag = Request { url: Some("http://127.0.0.1:9".into()), file: None };
        assert_eq!(url_of(&resolve(&flag, &signal).unwrap()), "http://127.0.0.1:9/v1/traces");
        let full = Request { url: Some("http://127.0.0.1:9/v1/traces".into()), file: None };
        assert_eq!(url_of(&resolve(&full, &none).unwrap()), "http://127.0.0.1:9/v1/traces");
    }

    #[test]
    fn protocol_headers_and_resource_come_from_the_environment() {
        let env = env_of(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x=1,bad"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X=2"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,team=infra"),
            ("OTEL_SERVICE_NAME", "laptop-7"),
        ]);
        let s = resolve(&Request::default(), &env).unwrap();
        let Target::Http { encoding, headers, .. } = &s.target else { panic!("http") };
        assert_eq!(*encoding, Encoding::Json);
        assert_eq!(headers, &[("api-key".to_owned(), "a b".to_owned()), ("X".to_owned(), "2".to_owned())]);
        let attr = |k: &str| {
            s.resource.iter().find(|kv| kv.key == k).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                Value::StringValue(v) => Some(v.clone()),
                _ => None,
            })
        };
        assert_eq!(attr("service.name").as_deref(), Some("laptop-7"));
        assert_eq!(attr("team").as_deref(), Some("infra"));
    }

    #[test]
    fn unsupported_transports_are_refused_with_a_reason() {
        let grpc = env_of(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(resolve(&Request::default(), &grpc).unwrap_err().contains("gRPC"));
        let tls = Request { url: Some("https://c:4318".into()), file: None };
        assert!(resolve(&tls, &env_of(&[])).unwrap_err().contains("plain http"));
    }
}
