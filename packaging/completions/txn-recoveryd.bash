# bash completion for txn-recoveryd(8). Installed by the Debian package as
# /usr/share/bash-completion/completions/txn-recoveryd. tests/docs_test.cc checks that it
# offers every command and option the program has.

_txn_recoveryd_watches() {
  # The watch names of the configuration on the command line (or the default one).
  local config=/etc/txn-recoveryd/txn-recoveryd.toml i
  for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
    case "${COMP_WORDS[i]}" in
      -c|--config) config="${COMP_WORDS[i+1]}" ;;
    esac
  done
  [[ -r "$config" ]] || return
  sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$config" 2>/dev/null
}

_txn_recoveryd() {
  local cur prev command i
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  local commands="run sweep check-config propose rehearse inspect pause resume explain retry release"

  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      run|sweep|check-config|propose|rehearse|inspect|pause|resume|explain|retry|release)
        command="${COMP_WORDS[i]}"; break ;;
    esac
  done

  case "$prev" in
    -c|--config|--web.config.file)
      COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    --textfile-dir)
      COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    --watch)
      COMPREPLY=($(compgen -W "$(_txn_recoveryd_watches)" -- "$cur")); return ;;
    --log-format)
      COMPREPLY=($(compgen -W "text json journal" -- "$cur")); return ;;
    --log-level)
      COMPREPLY=($(compgen -W "trace debug info warn error" -- "$cur")); return ;;
    --http-listen|--database|--sample)
      return ;;
  esac

  local options
  case "$command" in
    "") COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur")); return ;;
    run) options="--config --log-format --log-level --http-listen --web.config.file --help" ;;
    sweep) options="--config --watch --dry-run --json --orphans --share --textfile-dir --verbose -v --help" ;;
    check-config) options="--config --probe --help" ;;
    propose) options="--config --database --sample --help" ;;
    rehearse) options="--config --watch --json --help" ;;
    inspect) options="--config --watch --json --help" ;;
    pause|resume) options="--config --watch --help" ;;
    explain|retry|release) options="--config --watch --json --help" ;;
  esac
  COMPREPLY=($(compgen -W "$options" -- "$cur"))
}

complete -F _txn_recoveryd txn-recoveryd
