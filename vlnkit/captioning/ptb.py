"""The PTB tokenizer of the COCO caption code, without Java.

pycocoevalcap 1.2 (`tokenizer/ptbtokenizer.py`) pipes every caption of a set, one per line, through
Stanford CoreNLP 3.4.1's `edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase`, then drops
17 punctuation tokens. Scores move by points when another tokenizer is used, so this module reproduces
that lexer's rules (PTBLexer.flex: JFlex, longest match first, then the earlier rule) for the tokens a
caption can hold, and the wrapper's two quirks:

- the tokens an escaped bracket becomes (`-LRB-`, ...) are lowercased before the punctuation filter
  sees them, exactly as the Java side does;
- the reference joins captions with newlines and reads the output back line by line, so a caption
  holding a carriage return (R2R has some: "...meter\\r\\nGo to...") becomes several lines and shifts
  every later caption of the batch onto another caption's tokens. `tokenize` gives each caption its own
  tokens (a carriage return is a space); `reference_batch_lines` reproduces the reference's lines.
"""

from __future__ import annotations

import functools
import re

# pycocoevalcap/tokenizer/ptbtokenizer.py, PUNCTUATIONS.
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# Java's line terminators as PTBLexer's NEWLINE names them.
NEWLINE = re.compile("\r\n|\r|\n|\u2028|\u2029|\u000b|\u000c|\u0085")


def _caseless(pattern: str) -> str:
    """JFlex's %caseless for a pattern: letters outside character classes match either case.

    PTBLexer is caseless, but its character classes keep their case (`[A]rk` matches only "Ark"), so
    Python's IGNORECASE (which also widens classes) would be wrong.
    """
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        elif c == "{" and not in_class:
            close = pattern.index("}", i)
            out.append(pattern[i : close + 1])
            i = close + 1
            continue
        elif c == "(" and pattern.startswith("(?:", i):
            out.append("(?:")
            i += 3
            continue
        if not in_class and c.isalpha() and c.lower() != c.upper():
            out.append(f"[{c.lower()}{c.upper()}]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


_LETTER = r"[^\W\d_]"
_LD = r"[^\W_]"  # a letter or a digit
_APOS = "(?:['\u0092\u2019]|&apos;)"
_APOSETC = f"(?:{_APOS}|[\u0091\u2018\u201b])"
_SPACE = "[ \t\u00a0\u2000-\u200a\u3000]"
_NL = "(?:\r|\r?\n|\u2028|\u2029|\u000b|\u000c|\u0085)"
_SPACENL = f"(?:{_SPACE}|{_NL})"
_SGML = r"<(?:[!?][^>]*|\/?[A-Za-z][A-Za-z0-9:._-]*(?:[ \t][^>]*)?)>"
_SENTEND = f"{_SPACENL}(?:{_SPACENL}|[A-Z]|{_SGML})"

_WORD = rf"(?:{_LETTER}|\u00ad)+(?:[.!?]{_LETTER}(?:{_LETTER}|\d)*)*"
_NUM = r"(?:\d*(?:[.:,\u00ad\u066b\u066c]\d+)+|\d+)"
_HYPHEN = "[-_\u058a\u2010\u2011]"
_THING = rf"(?:[dDoOlL]{_APOSETC}{_LD})?{_LD}+(?:{_HYPHEN}(?:[dDoOlL]{_APOSETC}{_LD})?{_LD}+)*"
_THING3 = r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?\/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}"
_REDAUX = rf"{_APOS}(?:[msdMSD]|re|ve|ll)"
_SWORD = "[A-Za-z\u00ad]*[A-MO-Za-mo-z]\u00ad*"
_SREDAUX = rf"n{_APOSETC}t"
_APOWORD = (
    rf"{_APOS}n{_APOS}?|[lLdDjJ]{_APOS}|Dunkin{_APOS}|somethin{_APOS}|ol{_APOS}|{_APOS}em"
    rf"|[A-HJ-XZn]{_APOSETC}{_LETTER}{{2}}{_LETTER}*|{_APOS}[2-9]0s|{_APOS}till?"
    rf"|{_LETTER}{_LETTER}*[aeiouyAEIOUY]{_APOSETC}[aeiouA-Z]{_LETTER}*|{_APOS}cause|cont'd\.?|'twas"
    rf"|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l"
)
_ABMONTH = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
_ABDAYS = "Mon|Tue|Tues|Wed|Thu|Thurs|Fri"
_ABSTATE = (
    "Ala|Ariz|[A]rk|Calif|Colo|Conn|Dak|Del|Fla|Ga|[I]ll|Ind|Kans?|Ky|La|[M]ass|Md|Mich|Minn|[M]iss|Mo"
    "|Mont|Neb|Nev|Okla|[O]re|Pa|Penn|Tenn|Tex|Va|Vt|[W]ash|Wisc?|Wyo"
)
_ACRO = r"[A-Za-z](?:\.[A-Za-z])+|(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(?:U\.K|U\.S\.S\.R)"
_ABTITLE = (
    "Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt|Mt"
    "|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det"
)
_ABPTIT = r"Jr|Sr|Bros|(?:Ed|Ph)\.D|Blvd|Rd|Esq"
_ABCOMP = "Inc|Cos?|Corp|Pp?tys?|Ltd|Plc|Bancorp|Dept|Bhd|Assn|Univ|Intl|Sys"
_ABCOMP2 = "Invt|Elec|Natl|M[ft]g"
_ABNUM = "Ph|tel|est|ext|sq"  # 3.4.1 does not keep the period of "No." or "Prop." (checked)
_ABBREV1 = rf"(?:{_ABMONTH}|{_ABDAYS}|{_ABSTATE}|{_ABCOMP}|{_ABNUM}|{_ABPTIT}|etc|al|seq)\."
# Python takes the first alternative that matches, JFlex the longest: the longer ones come first.
_ABBREV4 = rf"(?:{_ACRO}|a\.k\.a|{_ABTITLE}|vs|Alex|Wm|Jos|Cie|cf|TREAS|ft|{_ABCOMP2}|[A-Za-z])"
_HTHING = rf"[A-Za-z0-9][A-Za-z0-9.,\u00ad]*(?:-(?:[A-Za-z0-9\u00ad]+|(?:{_ACRO})\.))+"
_INSENTP = "[,;:]"
_QUOTES = (
    f"{_APOS}|''|[`\u2018\u2019\u201a\u201b\u201c\u201d\u0091\u0092\u0093\u0094\u201e\u201f\u2039\u203a"
    "\u00ab\u00bb]{1,2}"
)

# PTBLexer's rules for the text a caption holds, in its order (which breaks ties of equal length):
# (pattern, trailing context or None, what the token becomes: None = its text; "drop" = a token the
# punctuation filter removes anyway, or text that makes no token; "can" = `cannot`'s split; "dashes";
# else a fixed text). URLs, e-mails, phone numbers and the WSJ acronym-before-pronoun rule are left out:
# they cannot change what the filter keeps for navigation text (a token is kept whole either way).
_RULES: list[tuple[str, str | None, str | None]] = [
    (_caseless("cannot"), None, "pushback3"),  # "can" "not"
    (_caseless("gonna|wanna|gotta|lemme|gimme"), None, "pushback2"),  # "gon" "na", ..., "lem" "me"
    (_SGML, None, None),
    ("&(?:MD|mdash|ndash);|[\u0096\u0097\u2013\u2014\u2015]", None, "drop"),
    ("&amp;", None, "&"),
    ("&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);", None, None),
    (_WORD, _REDAUX, None),
    (_SWORD, _SREDAUX, None),
    (_WORD, None, None),
    (_caseless(_APOWORD), None, None),
    (
        r"[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00a0]*@(?:[^ \t\n\f\r\"<>|().\u00a0]+\.)*[^ \t\n\f\r\"<>|().\u00a0]+",
        None,
        None,
    ),
    (f"[yY]{_APOS}", _LETTER, None),
    (_REDAUX, "[^A-Za-z]|$", "quote"),
    (_SREDAUX, None, "quote"),
    (r"\d{1,2}[\-\/]\d{1,2}[\-\/]\d{2,4}", None, None),
    (rf"[\-+]?{_NUM}", None, None),
    (r"(?:\d{1,4}[- \u00a0])?\d{1,4}(?:\\?\/|\u2044)\d{1,4}", None, "frac"),
    (
        _caseless(r"-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\.D\.s|pro-|anti-|S(?:&|&amp;)P-500|S(?:&|&amp;)Ls")
        + f"|{_caseless('Cap')}{_APOS}n|c{_APOS}est",
        None,
        None,
    ),
    (_THING3, None, None),
    (r"[A-Z]*\$|#", None, None),
    (r"@[a-zA-Z_][a-zA-Z_0-9]*|#[^\W\d_]+", None, None),
    (r"[<>]?[:;=8][\-o\*']?[\(\)DPdpO\\{@\|\[\]]", "[^A-Za-z]", "smiley"),
    (r"<<|>>", None, None),
    (_caseless(_ABBREV1), _SENTEND, None),
    (_caseless(_ABBREV1), "(?s:..)", None),  # {ABBREV1}/[^][^]: beats a WORD ending one letter later
    (_caseless(_ABBREV1), None, None),
    (_caseless(r"(?:ca|figs?|prop|nos?|art|bldg|pp|op)\."), f"{_SPACE}?\\d", None),
    (_caseless(_ABBREV4) + r"\.", None, None),
    (_caseless(_ABBREV4), _SPACE, None),
    (_caseless(_ACRO), f"{_SPACENL}|$", None),
    (f"{_APOS}[0-9][0-9]", f"{_SPACENL}|$", None),
    (rf"{_WORD}\.", _INSENTP, None),
    ('(?:"|&quot;)', "[A-Za-z0-9$]", "left_quote"),
    ('(?:"|&quot;)', None, "quote"),
    (r"\+", None, None),
    ("[%&\u2030\u2031]", None, None),
    (r"~|\^", None, None),
    (r"\||\\", None, None),
    (r"\x7f", None, "drop"),
    (r"\[", None, "-LSB-"),
    (r"\]", None, "-RSB-"),
    (r"&lt;", None, "<"),
    (r"&gt;", None, ">"),
    (r"<|>", None, None),
    (r"\{", None, "-LCB-"),
    (r"\}", None, "-RCB-"),
    (r"\(", None, "-LRB-"),
    (r"\)", None, "-RRB-"),
    (r"-+", None, "dashes"),
    ("\\.{3,5}|(?:\\.[ \u00a0]){2,4}\\.|[\u0085\u2026]", None, "..."),
    (r"@+|#+|_+", None, None),
    (r"\*+|(?:\\\*){1,3}", None, None),
    (_INSENTP, None, None),
    (r"[?!]+", None, None),
    ("[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa]", None, None),
    ("=", None, None),
    (r"\/", None, None),
    (rf"{_HTHING}\.", _INSENTP, None),
    (_HTHING, None, None),
    (rf"{_THING}\.", _INSENTP, None),
    (_THING, None, None),
    (r"[A-Z]+(?:(?:[+&]|&amp;)[A-Z]+)+\.", _INSENTP, None),
    (r"[A-Z]+(?:(?:[+&]|&amp;)[A-Z]+)+", None, None),
    ("'", "[A-Za-z][^ \t\n\r\u00a0]", "left_quote"),
    (_REDAUX, None, "quote"),
    (_QUOTES, None, "quote"),
    ("[\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00ba\u00d7\u00f7]", None, None),
    (f"\\x00|{_SPACE}+|[\u200b\u200e\u200f\ufeff]|{_NL}|&nbsp;", None, "drop"),
    (r"(?s:.)", None, "drop"),  # untokenizable: deleted (PTBTokenizer's default, firstDelete)
]
_COMPILED = [(re.compile(p), re.compile(t) if t else None, a) for p, t, a in _RULES]
_SPACES = re.compile(f"(?:{_SPACE}|{_NL})+")
# A run of ASCII letters followed by a space or the end is one WORD token whatever else could match
# (the rules that tie with it return the same text), except `cannot`.
_SPLIT_WORDS = frozenset(["cannot", "gonna", "wanna", "gotta", "lemme", "gimme"])
_PLAIN = re.compile(r"[A-Za-z]+(?=[ \t]|$)")


_LATEX = [
    ("[\u0091\u2018\u201b\u2039]", "`"),
    ("[\u0092\u2019\u203a]", "'"),
    ("[\u0093\u201c\u00ab]", "``"),
    ("[\u0094\u201d\u00bb]", "''"),
]


def _latex_quotes(text: str, probably_left: bool) -> str:
    """PTBLexer's `latexQuotes`: ASCII quotes become `` ` `` / `'` (doubled for `"`), curly ones likewise."""
    text = re.sub("&apos;|'", "`" if probably_left else "'", text)
    text = re.sub('"|&quot;', "``" if probably_left else "''", text)
    for pattern, replacement in _LATEX:
        text = re.sub(pattern, replacement, text)
    return text


def _lex_line(line: str) -> list[str]:
    """One line's tokens after lowercasing and the punctuation filter."""
    out: list[str] = []
    end = len(line)
    line += "\n"  # the reference's input has a newline after every caption (trailing contexts see it)
    pos = 0
    while pos < end:
        space = _SPACES.match(line, pos)
        if space:
            pos = space.end()
            continue
        plain = _PLAIN.match(line, pos)
        if plain and plain.group().lower() not in _SPLIT_WORDS:
            out.append(plain.group().lower())
            pos = plain.end()
            continue
        best, best_len, action = None, 0, None
        for pattern, trailing, what in _COMPILED:
            m = pattern.match(line, pos)
            if m is None or m.end() == pos:
                continue
            length = m.end() - pos
            if trailing is not None:
                t = trailing.match(line, m.end())
                if t is None:
                    continue
                length = t.end() - pos
            if length > best_len:
                best, best_len, action = m, length, what
        pos = best.end()
        text = best.group()
        if action == "drop":
            continue
        if action in ("pushback2", "pushback3"):
            back = int(action[-1])
            text, pos = text[:-back], pos - back
        elif action == "dashes":
            text = "--" if 3 <= len(text) <= 4 else text
        elif action == "quote" or action == "left_quote":
            text = _latex_quotes(text, action == "left_quote")
        elif action == "smiley":
            text = text.replace("(", "-LRB-").replace(")", "-RRB-")
        elif action == "frac":
            text = text.replace(" ", "\u00a0")
        elif action is not None:
            text = action
        text = text.lower()
        if text not in PUNCTUATIONS:
            out.append(text)
    return out


# A token spans a space only as an SGML tag, a fraction ("1 1/2"), spaced dots (". . .") or a phone
# number; every trailing context that looks past a space returns the same text as the rule it beats.
# Lines without those are lexed one whitespace-separated chunk at a time, each chunk once per process.
_SPANS_SPACE = re.compile(r"<|\d[ \u00a0]+\d|\.[ \u00a0]\.|\.[ \u00a0]\d")


@functools.lru_cache(maxsize=1 << 18)
def _lex_chunk(chunk: str) -> tuple[str, ...]:
    return tuple(_lex_line(chunk))


def _tokens(line: str) -> list[str]:
    if _SPANS_SPACE.search(line):
        return _lex_line(line)
    out: list[str] = []
    for chunk in _SPACES.split(line):
        if chunk:
            out.extend(_lex_chunk(chunk))
    return out


def tokenize(text: str) -> list[str]:
    """The reference tokens of one caption (line breaks inside it count as spaces)."""
    return _tokens(NEWLINE.sub(" ", text))


def reference_batch_lines(captions: list[str]) -> list[str]:
    """What pycocoevalcap's tokenizer returns for `captions` in this order: the i-th output line per caption.

    Reproduces the reference's shift: newlines become spaces, but a carriage return (or another Java
    line terminator) starts a new output line, so later captions read the lines of earlier ones.
    """
    joined = "\n".join(c.replace("\n", " ") for c in captions)
    lines = NEWLINE.split(joined)
    return [" ".join(_tokens(line)) for line in lines[: len(captions)]]


def reference_tokenize(captions_per_item: list[list[str]]) -> list[list[list[str]]]:
    """Tokens per caption exactly as pycocoevalcap's `PTBTokenizer().tokenize` returns them for one call.

    The reference tokenizes all captions of a call (all references of a set, or all hypotheses) as one
    batch in item order, so a carriage return in one caption shifts every later caption's tokens
    (`reference_batch_lines`); `tokenize` per caption is what the captions say, this is what the
    reference scored. An item whose captions ran past the batch's last line gets empty captions... never:
    the batch has at least as many lines as captions.
    """
    flat = [c for captions in captions_per_item for c in captions]
    lines = reference_batch_lines(flat)
    out, at = [], 0
    for captions in captions_per_item:
        out.append([lines[at + k].split() for k in range(len(captions))])
        at += len(captions)
    return out
