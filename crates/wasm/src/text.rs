//! Text that comes from a guest: its errors, its verdicts' reasons, its
//! log lines, and traps whose messages carry names it chose. All of it is
//! cut and escaped here, in one place, before it reaches a log, a pod's
//! condition or an event: a plugin cannot forge log lines (newlines, ANSI
//! escapes), reorder what a terminal shows (bidirectional overrides) or
//! write megabytes into the API server.

/// Longest text of a plugin's error or trap kept, in bytes.
pub const MAX_ERROR_BYTES: usize = 512;

/// Longest reason of a plugin's verdict kept (it goes into events and the
/// pod's condition), in bytes.
pub const MAX_REASON_BYTES: usize = 256;

/// Longest log line of a plugin kept, in bytes.
pub const MAX_LOG_BYTES: usize = 4096;

/// Whether `c` must not reach a log or a terminal as it is: control
/// characters (C0, DEL, C1: newlines, ESC), the line and paragraph
/// separators, and the marks and overrides that reorder bidirectional text.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// What marks a cut text, as kube-scheduler marks a truncated message.
const CUT: &str = " ...";

/// `s` with every unsafe character escaped (`\n`, `\t`, `\u{1b}`) and cut
/// to at most `limit` bytes between two characters as written (an escape is
/// never split), [`CUT`] marking a cut.
pub fn guest_text(s: &str, limit: usize) -> String {
    let mut out = String::with_capacity(s.len().min(limit));
    // The longest prefix that leaves room for the mark, should a cut come.
    let mut fits = 0;
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if unsafe_char(c) => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
        if out.len() > limit {
            out.truncate(fits);
            out.push_str(CUT);
            return out;
        }
        if out.len() + CUT.len() <= limit {
            fits = out.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_could_forge_or_reorder_lines() {
        assert_eq!(guest_text("ok: fine", 100), "ok: fine");
        assert_eq!(
            guest_text("a\nINFO forged\r\t\u{1b}[31mred", 100),
            "a\\nINFO forged\\r\\t\\u{1b}[31mred"
        );
        assert_eq!(
            guest_text("x\u{2028}y\u{202E}z\u{2066}", 100),
            "x\\u{2028}y\\u{202e}z\\u{2066}"
        );
        assert_eq!(guest_text("\u{85}\u{7f}", 100), "\\u{85}\\u{7f}");
        assert_eq!(guest_text("zoné ünïcode", 100), "zoné ünïcode", "text is kept");
    }

    #[test]
    fn cuts_at_the_limit_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let t = guest_text(&long, 100);
        assert!(t.len() <= 100, "{}", t.len());
        assert!(t.ends_with(" ..."));
        // An escape is never split.
        let t = guest_text(&"\n".repeat(1 << 20), 64);
        assert!(t.len() <= 64);
        assert!(t.trim_end_matches(" ...").split("\\n").all(str::is_empty), "{t}");
        // Nor a longer one, wherever the limit falls.
        for limit in 20..40 {
            let t = guest_text(&"\u{1b}".repeat(100), limit);
            assert!(t.len() <= limit, "{limit}: {t}");
            assert!(
                t.trim_end_matches(" ...").split("\\u{1b}").all(str::is_empty),
                "{limit}: {t}"
            );
        }
        assert_eq!(
            guest_text(&"a".repeat(10), 10),
            "a".repeat(10),
            "exactly the limit is kept"
        );
    }
}
