# Writes the text of IN as a C string, `static const char NAME[] = {...};`, into OUT (cmake -P).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "static const char ${NAME}[] = {${bytes}0x00};\n")
