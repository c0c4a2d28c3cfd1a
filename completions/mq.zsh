#compdef mq

_mq_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _MQ_COMPLETE=complete_zsh mq)
}

compdef _mq_completion mq

