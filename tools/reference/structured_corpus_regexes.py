"""Regexes (REGEXES) and xgrammar EBNF grammars (GRAMMARS) for the structured-outputs corpus."""

from __future__ import annotations

from typing import Optional

# ---------------------------------------------------------------------------------------------
# Regexes (Python re and xgrammar alike: no lookarounds, no backreferences)
# ---------------------------------------------------------------------------------------------

REGEXES: list[tuple[str, str]] = [
    ("digits", r"[0-9]+"),
    ("signed_int", r"-?(0|[1-9][0-9]{0,8})"),
    ("decimal", r"-?[0-9]{1,4}\.[0-9]{1,3}"),
    ("scientific", r"[+-]?[0-9]\.[0-9]{1,4}[eE][+-]?[0-9]{1,2}"),
    ("hex_color", r"#[0-9a-fA-F]{6}"),
    ("hex_color_short_or_long", r"#([0-9a-f]{3}|[0-9a-f]{6})"),
    ("time_24h", r"([01][0-9]|2[0-3]):[0-5][0-9]"),
    ("time_12h", r"(0?[1-9]|1[0-2]):[0-5][0-9] ?(AM|PM)"),
    ("iso_date", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"),
    ("us_phone", r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"),
    ("intl_phone", r"\+[1-9][0-9]{7,12}"),
    ("email_simple", r"[a-z0-9._%+-]{1,16}@[a-z0-9-]{1,12}\.(com|org|net|io)"),
    ("ipv4_octets", r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"),
    ("mac_address", r"([0-9A-F]{2}-){5}[0-9A-F]{2}"),
    ("uuid_v4", r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"),
    ("semver", r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z]{1,8})?"),
    ("zip_plus4", r"[0-9]{5}(-[0-9]{4})?"),
    ("uk_postcode", r"[A-Z]{1,2}[0-9][A-Z0-9]? [0-9][A-Z]{2}"),
    ("iban_like", r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,20}"),
    ("credit_card_groups", r"[0-9]{4}( [0-9]{4}){3}"),
    ("yes_no", r"(yes|no)"),
    ("yes_no_maybe_case", r"(Yes|No|Maybe)[.!]?"),
    ("bool_word", r"(true|false)"),
    ("sentence", r"[A-Z][a-z]{1,10}( [a-z]{1,10}){2,6}\."),
    ("word_list", r"[a-z]{2,8}(, [a-z]{2,8}){1,4}"),
    ("identifier", r"[A-Za-z_][A-Za-z0-9_]{0,15}"),
    ("snake_case", r"[a-z]+(_[a-z]+){0,3}"),
    ("camel_case", r"[a-z]+([A-Z][a-z]+){1,3}"),
    ("kebab_case", r"[a-z]+(-[a-z]+){1,3}"),
    ("url_simple", r"https?://[a-z0-9-]{1,12}\.(com|org|dev)(/[a-z0-9_-]{1,8}){0,3}"),
    ("unix_path", r"(/[a-z0-9._-]{1,8}){1,4}/?"),
    ("windows_path", r"[A-Z]:\\([A-Za-z0-9_]{1,8}\\){0,3}[A-Za-z0-9_]{1,8}\.(txt|exe|dll)"),
    ("key_value_pairs", r"[a-z]{1,6}=[0-9]{1,3}(&[a-z]{1,6}=[0-9]{1,3}){0,3}"),
    ("csv_row", r"[a-z]{1,6},[0-9]{1,4},(true|false)"),
    ("quoted_string", r"\"[^\"\\\n]{0,20}\""),
    ("markdown_heading", r"#{1,3} [A-Z][a-z]{1,10}( [a-z]{1,10}){0,3}"),
    ("html_tag", r"<(div|span|p)( class=\"[a-z]{1,8}\")?>[a-z ]{0,20}</(div|span|p)>"),
    ("sql_select", r"SELECT [a-z_]{1,8}(, [a-z_]{1,8}){0,2} FROM [a-z_]{1,10}( WHERE [a-z_]{1,8} = [0-9]{1,4})?;"),
    ("arith_expr_flat", r"[0-9]{1,3}( [-+*/] [0-9]{1,3}){1,4}"),
    ("roman_numeral", r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})"),
    ("chess_move", r"([KQRBN]?[a-h][1-8]|O-O(-O)?)[+#]?"),
    ("dna_sequence", r"[ACGT]{10,30}"),
    ("binary_string", r"[01]{8}( [01]{8}){0,3}"),
    ("version_tag", r"v[0-9]+\.[0-9]+(\.[0-9]+)?(-(alpha|beta|rc)\.[0-9]+)?"),
    ("currency_amount", r"\$[1-9][0-9]{0,2}(,[0-9]{3}){0,2}\.[0-9]{2}"),
    ("percentage", r"(100|[1-9]?[0-9])(\.[0-9]{1,2})?%"),
    ("temperature", r"-?[0-9]{1,2}(\.[0-9])? ?°[CF]"),
    ("json_like_pair", r"\{\"[a-z]{1,8}\": [0-9]{1,5}\}"),
    ("shorthand_classes", r"\d{2,4}-\w{2,6}\s\d{1,3}"),
    ("dot_any", r"Note: .{1,20}!"),
    ("negated_class", r"\[[^\]\n]{1,15}\]"),
    ("alternation_words", r"(the|a|an) (red|green|blue) (cat|dog|bird)"),
    ("optional_nested", r"a(b(c(d)?)?)?"),
    ("anchored", r"^[A-Z]{3}-[0-9]{3}$"),
    ("non_capturing_group", r"(?:ab|cd){1,3}x"),
    ("unicode_letters", r"[α-ω]{2,6}( [А-Яа-я]{2,6})?"),
]

# ---------------------------------------------------------------------------------------------
# Grammars (xgrammar EBNF). check: a Python regex for the (regular) language, or None
# ---------------------------------------------------------------------------------------------

GRAMMARS: list[tuple[str, str, Optional[str]]] = [
    ("yes_no", 'root ::= "yes" | "no"', r"yes|no"),
    ("digits_plus", 'root ::= [0-9]+', r"[0-9]+"),
    ("bounded_repeat", 'root ::= [a-z]{2,5} "-" [0-9]{3}', r"[a-z]{2,5}-[0-9]{3}"),
    ("csv_ints", 'root ::= int ("," int)*\nint ::= "0" | [1-9] [0-9]{0,3}', r"(0|[1-9][0-9]{0,3})(,(0|[1-9][0-9]{0,3}))*"),
    ("key_value_lines", 'root ::= line{1,3}\nline ::= key "=" value "\\n"\nkey ::= [a-z]+\nvalue ::= [0-9]+ | "\\"" [a-z ]* "\\""',
     r'([a-z]+=([0-9]+|"[a-z ]*")\n){1,3}'),
    ("ip_address", 'root ::= octet "." octet "." octet "." octet\noctet ::= "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9]',
     r"((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"),
    ("greeting", 'root ::= greeting " " name punct\ngreeting ::= "Hello" | "Hi" | "Good morning"\nname ::= [A-Z] [a-z]{1,8}\npunct ::= "!" | "."',
     r"(Hello|Hi|Good morning) [A-Z][a-z]{1,8}[!.]"),
    ("date_iso", 'root ::= year "-" month "-" day\nyear ::= [12] [0-9]{3}\nmonth ::= "0" [1-9] | "1" [0-2]\nday ::= "0" [1-9] | [12] [0-9] | "3" [01]',
     r"[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"),
    ("sql_select", 'root ::= "SELECT " cols " FROM " ident where? ";"\ncols ::= "*" | ident (", " ident)*\n'
                   'ident ::= [a-z_] [a-z0-9_]{0,9}\nwhere ::= " WHERE " ident " = " [0-9]+',
     r"SELECT (\*|[a-z_][a-z0-9_]{0,9}(, [a-z_][a-z0-9_]{0,9})*) FROM [a-z_][a-z0-9_]{0,9}( WHERE [a-z_][a-z0-9_]{0,9} = [0-9]+)?;"),
    ("comment_and_escapes", '# a comment line\nroot ::= "\\t" [^\\n"]{0,10} "\\u00e9"  # trailing comment', "\t[^\n\"]{0,10}\u00e9"),
    ("char_class_negation", 'root ::= "<" [^<>]* ">"', r"<[^<>]*>"),
    ("list_of_words", 'root ::= "[" (word (", " word)*)? "]"\nword ::= "\\"" [a-z]{1,8} "\\""',
     r'\[("[a-z]{1,8}"(, "[a-z]{1,8}")*)?\]'),
    ("email", 'root ::= local "@" domain\nlocal ::= [a-z0-9._]{1,12}\ndomain ::= [a-z]{2,10} ("." [a-z]{2,6}){1,2}',
     r"[a-z0-9._]{1,12}@[a-z]{2,10}(\.[a-z]{2,6}){1,2}"),
    # not regular: recognizers in tests/python/test_structured_corpus.py
    ("balanced_parens", 'root ::= pair+\npair ::= "(" pair* ")"', None),
    ("arith_expr", 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= factor (("*" | "/") factor)*\n'
                   'factor ::= [0-9]{1,3} | "(" expr ")"', None),
    ("nested_int_lists", 'root ::= list\nlist ::= "[" (item ("," item)*)? "]"\nitem ::= list | [0-9]', None),
    ("s_expression", 'root ::= sexp\nsexp ::= atom | "(" sexp (" " sexp)* ")"\natom ::= [a-z]{1,6} | [0-9]{1,3}', None),
    ("a_n_b_n", 'root ::= "a" root "b" | "ab"', None),
    ("json_array_of_objects", 'root ::= "[" (obj ("," obj)*)? "]"\nobj ::= "{\\"id\\":" [0-9]{1,4} ",\\"tags\\":" tags "}"\n'
                              'tags ::= "[" (str ("," str)*)? "]"\nstr ::= "\\"" [a-z]{0,6} "\\""', None),
    ("xml_nested", 'root ::= elem\nelem ::= "<a>" (elem | text)* "</a>" | "<b>" (elem | text)* "</b>"\ntext ::= [a-z]{1,5}', None),
    ("palindrome_abc", 'root ::= "a" root "a" | "b" root "b" | "c" root "c" | [abc] | ""', None),
]
