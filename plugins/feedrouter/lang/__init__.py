"""The subscription language: parse texts into the AST and print the AST back as XQuery or XPath.

>>> from feedrouter.lang import parse, to_xquery
>>> to_xquery(parse("//item[ @id=3 ]"))
'//item[@id = 3]'
"""

from feedrouter.lang import ast
from feedrouter.lang.parser import parse
from feedrouter.lang.printer import match_probe, to_xpath, to_xquery

__all__ = ["ast", "match_probe", "parse", "to_xpath", "to_xquery"]
