#pragma once
// The image content parts of the three chat APIs read into ImagePart (server/image_inputs.h), so that every API's
// images take the same path and the same limits. Each reader throws a 400 (ApiError) naming the field.
#include <string>

#include "server/image_inputs.h"
#include "server/json_fields.h"

namespace tf::server {

// Chat completions' `image_url` part ({"type": "image_url", "image_url": {"url", "detail"}}; the url alone as a
// string is taken too) at `p` (e.g. messages[0].content[1]). `detail` ("auto", "low", "high", "original") is
// checked and ignored: the processor's own resizing decides the image's tokens.
ImagePart chat_image_part(const JsonFields& part, const std::string& p);

// The Responses API's `input_image` part ({"type": "input_image", "image_url": "<url>", "detail"}); a `file_id`
// is refused (there is no files API here).
ImagePart responses_image_part(const JsonFields& part, const std::string& p);

// An Anthropic `image` block: a `source` of type "base64" (media_type image/png, image/jpeg or image/webp; GIF is
// refused) becomes a data: URL; a source of type "url" keeps its URL (fetched only with --vision-urls).
ImagePart anthropic_image_part(const JsonFields& block, const std::string& p);

}  // namespace tf::server
