# Loaded by schemathesis.sh (SCHEMATHESIS_HOOKS): uploads declared as audio/* in openapi.json are sent as the raw
# bytes schemathesis generates (it has no serializer for audio media types of its own).
import schemathesis


@schemathesis.serializer("audio/wav", "audio/mpeg", "audio/mp4", "audio/flac", "audio/ogg")
def audio_bytes(ctx, value):
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")
