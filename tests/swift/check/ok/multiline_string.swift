string s = """first line
"quoted" second line
""";
trace(s);
