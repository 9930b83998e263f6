#!/usr/bin/zsh -f
# zsh_complete.zsh DIR LINE: prints, one to a line, the candidates zsh's completion system
# (compinit, with DIR first on fpath) offers when Tab is pressed at the end of LINE.
#
# An interactive zsh runs in a pseudo-terminal (zpty); compadd is wrapped to print each match
# it is given, marked with a \1 byte so that the terminal's echo of the input is told apart, and
# the shell exits as soon as the completion ends.
zmodload zsh/zpty || exit 2
dir=$1 line=$2
zpty shell zsh -f -i
zpty -w shell "PROMPT= RPROMPT=; fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w shell "bindkey '^I' complete-word; comppostfuncs=( exit )"
zpty -w shell "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' insert-tab false"
# _describe and _path_files call compadd with -O, -A or -D to collect matches for themselves;
# those calls add nothing, so they pass through unprinted.
zpty -w shell 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
  local -a hits
  builtin compadd -A hits "$@"
  (( $#hits )) && print -rl -- $'"'"'\1'"'"'${^hits}
  builtin compadd "$@"
}'
zpty -w shell "$line"$'\t'
while zpty -r shell chunk; do print -rn -- "$chunk"; done | tr -d '\r' | sed -n 's/^.*\x01//p'
