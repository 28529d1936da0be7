"""Aider chat histories (`.aider.chat.history.md`) written as Aider writes them."""

from __future__ import annotations

from pathlib import Path

# an Aider chat history whose reply makes two SEARCH/REPLACE edits, one of them a new file
AIDER_EDITS = """
# aider chat started at 2025-12-03 14:43:45

> Aider v0.86.1  
> Main model: anthropic/claude-sonnet-4-5 with diff edit format  

#### Fix the tokenizer, and add a README  

The loop stops one short. Here is the fix:

parser.py
```python
<<<<<<< SEARCH
def tokens(text):
    out = text.split()
    for i in range(len(out) - 1):
        yield out[i]
=======
def tokens(text):
    out = text.split()
    for i in range(len(out)):
        yield out[i]
>>>>>>> REPLACE
```

README.md
```
<<<<<<< SEARCH
=======
# Tokenizer
>>>>>>> REPLACE
```

Both edits are small.

> Applied edit to parser.py  
"""


PREAMBLE = """-*- mode: fundamental -*-
> ^C again to exit  

#### finish the parser  

Done with the parser.

"""


SESSION_1 = """
# aider chat started at 2025-12-03 14:43:45

> /home/dev/.venv/bin/aider parser.py  
> Aider v0.86.1  
> Main model: anthropic/claude-sonnet-4-5⚡ with diff edit format, infinite output  
> Git repo: .git with 12 files  
> Added parser.py to the chat.  

#### Fix the tokenizer:  
#### it drops the last token  

The loop stops one short. Here is the fix:

parser.py
```python
<<<<<<< SEARCH
#### not a prompt, just code
> not aider output either
=======
for i in range(len(tokens)):
>>>>>>> REPLACE
```

> Quoted in the reply, right after text.

> Tokens: 2.4k sent, 1.6k cache write, 104 received. Cost: $0.0042 message, $0.0042 session.  
> Applied edit to parser.py  
> Commit 1b2614a fix: keep the last token  

#### /run pytest -q  
> 3 passed  

#### <blank>  
"""


SESSION_2 = """
# aider chat started at 2025-12-04 09:00:00

> Aider v0.86.1  
> Model: gpt-4o-mini with whole edit format  

#### hi  

Hello! How can I help?

> Tokens: 1,234 sent, 1,000 cache hit, 12 received.
"""


def history(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / ".aider.chat.history.md"
    path.write_text(text)
    return path
