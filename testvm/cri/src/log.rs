//! The CRI container log format, as the runtime writes it and `kubectl
//! logs` reads it: one line per chunk, `TIMESTAMP STREAM TAG MESSAGE`,
//! TAG `F` for a full line and `P` for a partial one (the message goes
//! on in the next chunk, without a line break).

/// The container's output, both streams in the order written.
pub fn output(log: &str) -> String {
    let mut text = String::new();
    for line in log.lines() {
        let mut fields = line.splitn(4, ' ');
        let (Some(_time), Some(_stream), Some(tag)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        text.push_str(fields.next().unwrap_or(""));
        if tag != "P" {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_partial_lines() {
        let log = "2026-01-01T00:00:00.1Z stdout F hello world\n\
                   2026-01-01T00:00:00.2Z stderr P sh: can't \n\
                   2026-01-01T00:00:00.3Z stderr F open: Permission denied\n\
                   2026-01-01T00:00:00.4Z stdout F \n";
        assert_eq!(
            output(log),
            "hello world\nsh: can't open: Permission denied\n\n"
        );
        assert_eq!(output(""), "");
        assert_eq!(output("garbage\n"), "");
    }
}
