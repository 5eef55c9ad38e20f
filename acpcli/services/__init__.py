"""Client services: what the agent may ask of the client. Permission decisions, files
confined to the session's roots, terminals, ``@path`` mentions and elicitation forms.

Floor: above the wire's redaction and the message store; below the session layer.
"""
