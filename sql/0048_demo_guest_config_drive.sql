-- A config drive is now made only when it is due, as in Nova: asked for, forced by
-- [compute] force_config_drive, or mandatory for the image (img_config_drive=mandatory).
-- The demo guest learns who it is only from its drive, so its machine image, registered
-- before under the fixed id image.demo.image_id('nova-async-demo'), says it is mandatory;
-- so do the specs of the instances booted from it, which a rebuild reads the image's
-- properties from. A property someone already set is left as it is.
UPDATE images
   SET properties = properties || '{"img_config_drive": "mandatory"}'::jsonb, updated_at = now()
 WHERE id = '058dbaf5-5b23-54fd-b524-5a7453b16011'
   AND NOT properties ? 'img_config_drive';
UPDATE instances
   SET request_spec = jsonb_set(request_spec, '{image_properties,img_config_drive}', '"mandatory"')
 WHERE image_ref = '058dbaf5-5b23-54fd-b524-5a7453b16011'
   AND jsonb_typeof(request_spec -> 'image_properties') = 'object'
   AND NOT request_spec -> 'image_properties' ? 'img_config_drive';
